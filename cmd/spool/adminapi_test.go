package main

import (
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestAdminErrorsAreOneLine: a refusal of the admin API reads as the node's
// message on one line, not as a raw HTTP exchange.
func TestAdminErrorsAreOneLine(t *testing.T) {
	n := testNode(t)
	_, _, err := runCLI(t, "", "placement", "no-such-topic", "--admin", n.AdminAddr())
	if err == nil {
		t.Fatal("placement of an unknown topic succeeded")
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || strings.Contains(msg, "http://") || !strings.HasPrefix(msg, `unknown topic "no-such-topic" (404 Not Found from the admin API at `) {
		t.Errorf("admin error: %q", msg)
	}

	// Something else on the port (an HTML error page) is named as such.
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte("<html>\n<body>Not here</body>\n</html>\n"))
	})}
	addr := freeAddr(t)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	_, _, err = runCLI(t, "", "members", "--admin", addr)
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "not Spool's (is --admin the node's --admin-addr?)") {
		t.Errorf("members against a web server that is not Spool: %v", err)
	}
}
