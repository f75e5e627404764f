// Package saslclients adapts franz-go's SCRAM client to the SCRAM client
// interfaces of sarama and kafka-go, which ship none of their own without
// xdg-go/scram, so that tests can drive those clients over SCRAM against a
// node. The client side of the exchange is franz-go's, not Spool's.
package saslclients

import (
	"context"

	"github.com/IBM/sarama"
	kafkagosasl "github.com/segmentio/kafka-go/sasl"
	kgosasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// scramMechanism is franz-go's SCRAM mechanism for a sarama or kafka-go
// mechanism name.
func scramMechanism(name, user, password string) kgosasl.Mechanism {
	a := scram.Auth{User: user, Pass: password}
	if name == sarama.SASLTypeSCRAMSHA256 {
		return a.AsSha256Mechanism()
	}
	return a.AsSha512Mechanism()
}

// SaramaSCRAM is a sarama.SCRAMClient for mechanism (SCRAM-SHA-256 or
// SCRAM-SHA-512), for Config.Net.SASL.SCRAMClientGeneratorFunc.
func SaramaSCRAM(mechanism string) func() sarama.SCRAMClient {
	return func() sarama.SCRAMClient { return &saramaSCRAM{name: mechanism} }
}

type saramaSCRAM struct {
	name string
	mech kgosasl.Mechanism
	sess kgosasl.Session
	done bool
}

func (c *saramaSCRAM) Begin(user, password, _ string) error {
	c.mech, c.sess, c.done = scramMechanism(c.name, user, password), nil, false
	return nil
}

func (c *saramaSCRAM) Step(challenge string) (string, error) {
	if c.sess == nil {
		sess, first, err := c.mech.Authenticate(context.Background(), "")
		c.sess = sess
		return string(first), err
	}
	done, msg, err := c.sess.Challenge([]byte(challenge))
	c.done = done
	return string(msg), err
}

func (c *saramaSCRAM) Done() bool { return c.done }

// KafkaGoSCRAM512 is a kafka-go sasl.Mechanism for SCRAM-SHA-512.
func KafkaGoSCRAM512(user, password string) kafkagosasl.Mechanism {
	return kafkaGoSCRAM{scramMechanism(sarama.SASLTypeSCRAMSHA512, user, password)}
}

type kafkaGoSCRAM struct{ mech kgosasl.Mechanism }

func (m kafkaGoSCRAM) Name() string { return m.mech.Name() }

func (m kafkaGoSCRAM) Start(ctx context.Context) (kafkagosasl.StateMachine, []byte, error) {
	sess, first, err := m.mech.Authenticate(ctx, "")
	return kafkaGoSession{sess}, first, err
}

type kafkaGoSession struct{ sess kgosasl.Session }

func (s kafkaGoSession) Next(_ context.Context, challenge []byte) (bool, []byte, error) {
	return s.sess.Challenge(challenge)
}
