package sasl

// The store a node authenticates against: the cluster's SCRAM users (the
// membership catalog, managed with AlterUserScramCredentials and spread to
// every node) under the node's own users (the credentials file and the
// bootstrap user). Where both hold a credential for one user and
// mechanism, the node's own wins: the file is the operator's, local and
// out of reach of Kafka clients, so no client can take over a user it
// defines, and it stays the way back in when the cluster's users are
// wrong. The combined store is rebuilt lazily, on the first handshake
// after either side changed.

import (
	"sync/atomic"

	"github.com/spool-log/spool/membership"
)

// UserSource is the cluster's users as a node holds them: a generation
// that changes whenever they do, and the users.
type UserSource interface {
	UsersGeneration() uint64
	Users() []membership.UserEntry
}

// Users is the node's own store over the cluster's users.
type Users struct {
	src  UserSource
	own  atomic.Pointer[Store]
	view atomic.Pointer[usersView]
}

// usersView is one build of the combined store and what it was built
// from.
type usersView struct {
	own   *Store // Users.own when built
	gen   uint64 // the source's generation when built
	store *Store
}

// NewUsers is own over src's users.
func NewUsers(src UserSource, own *Store) *Users {
	u := &Users{src: src}
	u.own.Store(own)
	return u
}

// Own is the node's own store.
func (u *Users) Own() *Store { return u.own.Load() }

// SetOwn replaces the node's own store (a reload).
func (u *Users) SetOwn(s *Store) { u.own.Store(s) }

// Store is the store a SASL handshake looks users up in.
func (u *Users) Store() *Store {
	own := u.own.Load()
	gen := u.src.UsersGeneration()
	if v := u.view.Load(); v != nil && v.own == own && v.gen == gen {
		return v.store
	}
	store := NewStore()
	for _, e := range u.src.Users() { // read after gen: a change meanwhile rebuilds again
		store.Set(e.Name, credentialOf(e))
	}
	if own != nil {
		for _, c := range own.All() {
			store.Set(c.User, c.ScramCredential)
		}
	}
	u.view.Store(&usersView{own: own, gen: gen, store: store})
	return store
}

func credentialOf(e membership.UserEntry) ScramCredential {
	return ScramCredential{Mechanism: e.Mechanism, Iterations: e.Iterations, Salt: e.Salt,
		StoredKey: e.StoredKey, ServerKey: e.ServerKey}
}
