package admin

import "context"

// View is a Node and a Rebalancer made of the broker's parts, which the
// broker's wiring hands the API.
type View struct {
	WhyUnfit    func() error // Unfit
	WhyNotReady func() error // Readiness
	Counters    func() Stats
	Catalog     func() any
	Led         func() map[int32]int
	Leader      func(topic string, partition int32) Leadership
	Status      func(ctx context.Context, local bool) RebalanceStatus
	Pause       func(paused bool) error
	// Details are /readyz's lines beside "ready"; nil: none.
	Details func() []string
}

var (
	_ Node       = View{}
	_ Rebalancer = View{}
)

func (v View) Unfit() error                    { return v.WhyUnfit() }
func (v View) Readiness() error                { return v.WhyNotReady() }
func (v View) Stats() Stats                    { return v.Counters() }
func (v View) Topics() any                     { return v.Catalog() }
func (v View) PartitionsLed() map[int32]int    { return v.Led() }
func (v View) SetRebalancePaused(p bool) error { return v.Pause(p) }
func (v View) Leadership(topic string, partition int32) Leadership {
	return v.Leader(topic, partition)
}
func (v View) RebalanceStatus(ctx context.Context, local bool) RebalanceStatus {
	return v.Status(ctx, local)
}

// ReadyDetails are /readyz's lines beside "ready".
func (v View) ReadyDetails() []string {
	if v.Details == nil {
		return nil
	}
	return v.Details()
}
