package peers

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// PostToBroker posts the request as JSON to the broker's admin address
// and decodes its answer; an unknown broker or a refusal is an error that
// names the broker.
func TestPostToBroker(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/echo" {
			http.Error(w, "no such path", http.StatusNotFound)
			return
		}
		var in map[string]int
		_ = json.NewDecoder(r.Body).Decode(&in)
		_ = json.NewEncoder(w).Encode(map[string]int{"got": in["n"]})
	}))
	defer srv.Close()
	addrs := func(id int32) (string, bool) {
		if id == 2 {
			return strings.TrimPrefix(srv.URL, "http://"), true
		}
		return "", false
	}
	c := New(nil, nil)
	ctx := context.Background()
	var out map[string]int
	if err := c.PostToBroker(ctx, addrs, 2, "/v1/echo", map[string]int{"n": 7}, 1024, &out); err != nil || out["got"] != 7 {
		t.Fatalf("answer %v, %v", out, err)
	}
	if err := c.PostToBroker(ctx, addrs, 3, "/v1/echo", nil, 1024, &out); err == nil || !strings.Contains(err.Error(), "broker 3") {
		t.Fatalf("unknown broker: %v", err)
	}
	if err := c.PostToBroker(ctx, addrs, 2, "/v1/other", nil, 1024, &out); err == nil || !strings.Contains(err.Error(), "broker 2") {
		t.Fatalf("refused: %v", err)
	}
}
