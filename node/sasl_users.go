package node

// The SASL store the node authenticates against: the cluster's SCRAM
// users (the membership catalog, managed with AlterUserScramCredentials
// and spread to every node) under the node's own users (the credentials
// file and the bootstrap user). Where both hold a credential for one user
// and mechanism, the node's own wins: the file is the operator's, local
// and out of reach of Kafka clients, so no client can take over a user it
// defines, and it stays the way back in when the cluster's users are
// wrong. The combined store is rebuilt lazily, on the first handshake
// after either side changed.

import (
	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/sasl"
)

// saslView is one build of the combined store and what it was built from.
type saslView struct {
	base  *sasl.Store // n.saslStore when built
	gen   uint64      // the catalog's users generation when built
	store *sasl.Store
}

// authStore is the store a SASL handshake looks users up in.
func (n *Node) authStore() *sasl.Store {
	base := n.saslStore.Load()
	agent := n.agent
	if agent == nil {
		return base
	}
	gen := agent.UsersGeneration()
	if v := n.saslView.Load(); v != nil && v.base == base && v.gen == gen {
		return v.store
	}
	store := sasl.NewStore()
	for _, u := range agent.Users() { // read after gen: a change meanwhile rebuilds again
		store.Set(u.Name, credentialOf(u))
	}
	if base != nil {
		for _, c := range base.All() {
			store.Set(c.User, c.ScramCredential)
		}
	}
	n.saslView.Store(&saslView{base: base, gen: gen, store: store})
	return store
}

func credentialOf(u membership.UserEntry) sasl.ScramCredential {
	return sasl.ScramCredential{Mechanism: u.Mechanism, Iterations: u.Iterations, Salt: u.Salt,
		StoredKey: u.StoredKey, ServerKey: u.ServerKey}
}
