package admin

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/spool-log/spool/adminapi"
	"github.com/spool-log/spool/internal/httpjson"
	"github.com/spool-log/spool/membership"
)

// gossipKeyRoutes rotate the gossip keyring cluster-wide (membership/keys.go):
//
//	GET  /v1/gossip-keys               the keys every member holds, by
//	                                   fingerprint, with how many hold each
//	                                   and use it as primary
//	POST /v1/gossip-keys/install       {"key": "<base64>"}: add the key
//	POST /v1/gossip-keys/use           {"key": ...}: make it the primary
//	POST /v1/gossip-keys/remove        {"key": ...}: take it out
//
// The Raft transport authenticates with the same keyring, so each step
// counts for replication from the next connection. Keys travel only in
// POST bodies (never in a URL a proxy logs) and are never answered back.
// A change needs the admin credential (access.go: every POST does).
func (a *API) gossipKeyRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/gossip-keys", func(w http.ResponseWriter, r *http.Request) {
		a.serveKeyOp(w, membership.KeyList, nil)
	})
	for _, op := range []membership.KeyOp{membership.KeyInstall, membership.KeyUse, membership.KeyRemove} {
		mux.HandleFunc("POST /v1/gossip-keys/"+string(op), func(w http.ResponseWriter, r *http.Request) {
			var body adminapi.GossipKeyRequest
			if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&body); err != nil {
				http.Error(w, "want a JSON body {\"key\": \"<base64 of the key>\"}", http.StatusBadRequest)
				return
			}
			key, err := base64.StdEncoding.DecodeString(body.Key)
			if err != nil || len(key) != 32 {
				http.Error(w, "key: want base64 of 32 bytes", http.StatusBadRequest)
				return
			}
			a.serveKeyOp(w, op, key)
		})
	}
}

func (a *API) serveKeyOp(w http.ResponseWriter, op membership.KeyOp, key []byte) {
	rep, err := a.cfg.Agent.ChangeGossipKey(op, key)
	switch {
	case errors.Is(err, membership.ErrNotEncrypted):
		http.Error(w, err.Error(), http.StatusConflict)
	case err != nil:
		// Some member failed or did not answer: say which, so the
		// operator can fix it and repeat (every step is idempotent).
		msg := err.Error()
		for name, m := range rep.Messages {
			msg += "; " + name + ": " + m
		}
		http.Error(w, msg, http.StatusBadGateway)
	default:
		httpjson.Write(w, rep)
	}
}
