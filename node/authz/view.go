package authz

import (
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/membership"
)

// ACLSource is the cluster's ACLs as a node holds them (the membership
// catalog): a generation that changes whenever they do, and the ACLs.
type ACLSource interface {
	ACLsGeneration() uint64
	ACLs() []membership.ACLBinding
}

// View is the authorizer for the source's ACLs as they are now, rebuilt
// on the first request after they change. A cluster without ACLs under
// the allow-everyone default pays two atomic loads and a branch per
// request.
type View struct {
	cfg   Config
	src   ACLSource
	built atomic.Pointer[build]
}

// build is one build of the authorizer and the ACL generation it was
// built from.
type build struct {
	gen uint64
	az  *Authorizer
}

// NewView is the view of src's ACLs under cfg.
func NewView(cfg Config, src ACLSource) *View { return &View{cfg: cfg, src: src} }

// Authorizer is the authorizer for the source's ACLs as they are now.
func (v *View) Authorizer() *Authorizer {
	gen := v.src.ACLsGeneration()
	if b := v.built.Load(); b != nil && b.gen == gen {
		return b.az
	}
	var bindings []Binding
	for _, b := range v.src.ACLs() { // read after gen: a change meanwhile rebuilds again
		bindings = append(bindings, BindingOf(b))
	}
	az := New(v.cfg, bindings)
	v.built.Store(&build{gen: gen, az: az})
	return az
}

// Bindings are the source's ACLs now, in its order.
func (v *View) Bindings() []Binding {
	all := v.src.ACLs()
	if all == nil {
		return nil
	}
	out := make([]Binding, len(all))
	for i, b := range all {
		out[i] = BindingOf(b)
	}
	return out
}

// BindingOf is a catalog ACL in Kafka's protocol codes.
func BindingOf(b membership.ACLBinding) Binding {
	return Binding{ResourceType: kmsg.ACLResourceType(b.ResourceType), ResourceName: b.ResourceName,
		PatternType: kmsg.ACLResourcePatternType(b.PatternType), Principal: b.Principal, Host: b.Host,
		Operation: kmsg.ACLOperation(b.Operation), Permission: kmsg.ACLPermissionType(b.Permission)}
}

// CatalogBindingOf is b as the catalog keeps it.
func CatalogBindingOf(b Binding) membership.ACLBinding {
	return membership.ACLBinding{ResourceType: int8(b.ResourceType), ResourceName: b.ResourceName,
		PatternType: int8(b.PatternType), Principal: b.Principal, Host: b.Host,
		Operation: int8(b.Operation), Permission: int8(b.Permission)}
}

// CatalogBindings is bs as the catalog keeps them.
func CatalogBindings(bs []Binding) []membership.ACLBinding {
	out := make([]membership.ACLBinding, len(bs))
	for i, b := range bs {
		out[i] = CatalogBindingOf(b)
	}
	return out
}
