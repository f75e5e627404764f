package membership

// Client quotas as the catalog holds them (Kafka's KIP-546 entity model):
// one entry per (entity, quota key), live or a tombstone, spread, merged,
// persisted and pulled exactly as ACLs are. An entity is a user, a
// client id, both, or an ip, each component a name or the default; a
// key is one of Kafka's quota configs. Keying by (entity, key) rather
// than by entity lets two nodes change different keys of one entity at
// once without one change undoing the other.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"unicode/utf8"
)

// Kafka's quota entity types.
const (
	QuotaEntityUser     = "user"
	QuotaEntityClientID = "client-id"
	QuotaEntityIP       = "ip"
)

// Kafka's quota config keys.
const (
	QuotaProducerByteRate       = "producer_byte_rate"
	QuotaConsumerByteRate       = "consumer_byte_rate"
	QuotaRequestPercentage      = "request_percentage"
	QuotaControllerMutationRate = "controller_mutation_rate"
	QuotaConnectionCreationRate = "connection_creation_rate"
)

// userClientQuotaKeys tells, per key an entity of user and client-id may
// carry, whether its value must be a whole number (Kafka's LONG keys).
var userClientQuotaKeys = map[string]bool{
	QuotaProducerByteRate:       true,
	QuotaConsumerByteRate:       true,
	QuotaRequestPercentage:      false,
	QuotaControllerMutationRate: false,
}

// ipQuotaKeys are the keys an ip entity may carry (an INT key).
var ipQuotaKeys = map[string]bool{QuotaConnectionCreationRate: true}

const (
	// MaxQuotas bounds the live quota entries a cluster holds, so the
	// catalog stays small (an entry is about 150 bytes of JSON).
	MaxQuotas = 20000

	maxQuotaNameLen = 1024
)

var (
	ErrInvalidQuota  = errors.New("invalid client quota")
	ErrTooManyQuotas = fmt.Errorf("more than %d client quotas", MaxQuotas)
)

// QuotaName is one component of an entity: absent (Set false), the
// entity type's default (Default), or a name.
type QuotaName struct {
	Set     bool   `json:"set,omitempty"`
	Default bool   `json:"default,omitempty"`
	Name    string `json:"name,omitempty"`
}

// QuotaNamed is a component with a name; QuotaDefault the default one.
func QuotaNamed(name string) QuotaName { return QuotaName{Set: true, Name: name} }
func QuotaDefault() QuotaName          { return QuotaName{Set: true, Default: true} }

func (q QuotaName) String() string {
	switch {
	case !q.Set:
		return ""
	case q.Default:
		return "<default>"
	}
	return q.Name
}

// QuotaEntity is what a quota applies to.
type QuotaEntity struct {
	User     QuotaName `json:"user,omitzero"`
	ClientID QuotaName `json:"clientId,omitzero"`
	IP       QuotaName `json:"ip,omitzero"`
}

func (e QuotaEntity) String() string {
	s := ""
	add := func(typ string, n QuotaName) {
		if !n.Set {
			return
		}
		if s != "" {
			s += ","
		}
		s += typ + "=" + n.String()
	}
	add(QuotaEntityUser, e.User)
	add(QuotaEntityClientID, e.ClientID)
	add(QuotaEntityIP, e.IP)
	return s
}

// Validate applies Kafka's rules to an entity: at least one component,
// an ip alone, names non-empty and bounded, an ip name an IP address.
func (e QuotaEntity) Validate() error {
	if !e.User.Set && !e.ClientID.Set && !e.IP.Set {
		return fmt.Errorf("%w: empty entity", ErrInvalidQuota)
	}
	if e.IP.Set && (e.User.Set || e.ClientID.Set) {
		return fmt.Errorf("%w: an ip entity cannot be combined with a user or client-id", ErrInvalidQuota)
	}
	for _, c := range []struct {
		typ string
		n   QuotaName
	}{{QuotaEntityUser, e.User}, {QuotaEntityClientID, e.ClientID}, {QuotaEntityIP, e.IP}} {
		if !c.n.Set {
			continue
		}
		if c.n.Default {
			if c.n.Name != "" {
				return fmt.Errorf("%w: default %s with a name", ErrInvalidQuota, c.typ)
			}
			continue
		}
		if c.n.Name == "" {
			return fmt.Errorf("%w: empty %s name", ErrInvalidQuota, c.typ)
		}
		if len(c.n.Name) > maxQuotaNameLen || !utf8.ValidString(c.n.Name) {
			return fmt.Errorf("%w: %s name of %d bytes is not valid UTF-8 of at most %d", ErrInvalidQuota, c.typ, len(c.n.Name), maxQuotaNameLen)
		}
		if c.typ == QuotaEntityIP {
			if _, err := netip.ParseAddr(c.n.Name); err != nil {
				return fmt.Errorf("%w: %.60q is not a valid IP address", ErrInvalidQuota, c.n.Name)
			}
		}
	}
	return nil
}

// ValidateQuota checks that key is one an entity of e's kind may carry and
// that value fits it: finite, not negative, whole for a byte or
// connection rate. e must be valid.
func ValidateQuota(e QuotaEntity, key string, value float64) error {
	keys := userClientQuotaKeys
	if e.IP.Set {
		keys = ipQuotaKeys
	}
	integral, ok := keys[key]
	if !ok {
		if _, other := userClientQuotaKeys[key]; other || key == QuotaConnectionCreationRate {
			return fmt.Errorf("%w: %s does not apply to entity %s", ErrInvalidQuota, key, e)
		}
		return fmt.Errorf("%w: unknown quota key %.60q", ErrInvalidQuota, key)
	}
	if math.IsNaN(value) || math.IsInf(value, 0) {
		return fmt.Errorf("%w: %s=%v is not a finite number", ErrInvalidQuota, key, value)
	}
	if value < 0 {
		return fmt.Errorf("%w: %s=%v is negative", ErrInvalidQuota, key, value)
	}
	if integral && (value != math.Trunc(value) || value > math.MaxInt64) {
		return fmt.Errorf("%w: %s=%v must be a whole number", ErrInvalidQuota, key, value)
	}
	return nil
}

// QuotaKeyIntegral tells whether key's values are whole numbers.
func QuotaKeyIntegral(key string) bool { return userClientQuotaKeys[key] || ipQuotaKeys[key] }

// QuotaEntry is one key of one entity with its version. The higher
// (Lamport, Origin) wins, then a tombstone, then the higher value (only a
// bug reaches it).
type QuotaEntry struct {
	Entity  QuotaEntity `json:"entity"`
	Key     string      `json:"key"`
	Value   float64     `json:"value,omitempty"`
	Deleted bool        `json:"deleted,omitempty"`
	Lamport uint64      `json:"lamport"`
	Origin  int32       `json:"origin"`
}

// quotaKey is what a quota entry is stored under.
type quotaKey struct {
	entity QuotaEntity
	key    string
}

func (e QuotaEntry) key() quotaKey     { return quotaKey{e.Entity, e.Key} }
func (e QuotaEntry) lamport() uint64   { return e.Lamport }
func (e QuotaEntry) clone() QuotaEntry { return e }

func (e QuotaEntry) newerThan(o QuotaEntry) bool {
	if e.Lamport != o.Lamport {
		return e.Lamport > o.Lamport
	}
	if e.Origin != o.Origin {
		return e.Origin > o.Origin
	}
	if e.Deleted != o.Deleted {
		return e.Deleted
	}
	return e.Value > o.Value
}

// less orders entries by entity (user, client id, ip; absent first, then
// the default, then names) and key.
func (e QuotaEntry) less(o QuotaEntry) bool {
	for _, p := range [][2]QuotaName{{e.Entity.User, o.Entity.User}, {e.Entity.ClientID, o.Entity.ClientID}, {e.Entity.IP, o.Entity.IP}} {
		if c := compareQuotaName(p[0], p[1]); c != 0 {
			return c < 0
		}
	}
	return e.Key < o.Key
}

func compareQuotaName(a, b QuotaName) int {
	rank := func(n QuotaName) int {
		switch {
		case !n.Set:
			return 0
		case n.Default:
			return 1
		}
		return 2
	}
	if ra, rb := rank(a), rank(b); ra != rb {
		return ra - rb
	}
	switch {
	case a.Name < b.Name:
		return -1
	case a.Name > b.Name:
		return 1
	}
	return 0
}

func (e QuotaEntry) validate() error {
	if err := e.Entity.Validate(); err != nil {
		return err
	}
	if e.Deleted {
		if e.Value != 0 {
			return fmt.Errorf("%w: %s %s: tombstone carries a value", ErrInvalidQuota, e.Entity, e.Key)
		}
		_, uc := userClientQuotaKeys[e.Key]
		_, ip := ipQuotaKeys[e.Key]
		if !uc && !ip {
			return fmt.Errorf("%w: unknown quota key %.60q", ErrInvalidQuota, e.Key)
		}
		return nil
	}
	return ValidateQuota(e.Entity, e.Key, e.Value)
}

// appendDigest appends the entry's identity and content for
// Catalog.Digest: per component a presence byte (0 absent, 1 default, 2
// named) and the name then 0x00, the key then 0x00, the value's bits (8).
func (e QuotaEntry) appendDigest(buf []byte) []byte {
	for _, n := range []QuotaName{e.Entity.User, e.Entity.ClientID, e.Entity.IP} {
		switch {
		case !n.Set:
			buf = append(buf, 0)
		case n.Default:
			buf = append(buf, 1)
		default:
			buf = append(buf, 2)
			buf = append(buf, n.Name...)
			buf = append(buf, 0)
		}
	}
	buf = append(buf, e.Key...)
	buf = append(buf, 0)
	return binary.BigEndian.AppendUint64(buf, math.Float64bits(e.Value))
}
