package admin

import (
	"net/http"
	"net/http/pprof"
	"os"
	"strings"
)

// Go's profiler on the admin port is off unless Config.EnablePprof: the
// admin port has to be reachable by peers (anti-entropy), profiles cost CPU
// on demand, and pprof's own /cmdline would hand out every flag, secrets
// included. Even when on, /debug/pprof/cmdline serves the command line with
// secret flags' values redacted.

// SecretFlags are the `spool node` flags whose values are secrets: never
// logged, never served.
var SecretFlags = []string{"gossip-key"}

// Redacted stands in for a secret's value.
const Redacted = "<redacted>"

// RedactArgs returns a copy of a command line with the value of every
// secret flag replaced by Redacted, in both spellings pflag accepts
// ("--flag value" and "--flag=value", with one dash too).
func RedactArgs(args []string) []string {
	out := make([]string, len(args))
	copy(out, args)
	for i := 0; i < len(out); i++ {
		name, value, hasValue := strings.Cut(strings.TrimLeft(out[i], "-"), "=")
		if !strings.HasPrefix(out[i], "-") || !isSecretFlag(name) {
			continue
		}
		if hasValue {
			out[i] = out[i][:len(out[i])-len(value)] + Redacted
		} else if i+1 < len(out) {
			out[i+1] = Redacted
			i++
		}
	}
	return out
}

// SecretOnCommandLine names the first secret flag args gives a value on the
// command line, where every local user can read it (ps, /proc/PID/cmdline).
func SecretOnCommandLine(args []string) (string, bool) {
	for _, a := range args {
		if a == "--" {
			break
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && isSecretFlag(name) {
			return "--" + name, true
		}
	}
	return "", false
}

func isSecretFlag(name string) bool {
	for _, s := range SecretFlags {
		if name == s {
			return true
		}
	}
	return false
}

// pprofRoutes serves Go's profiler under /debug/pprof/ with a redacted
// /cmdline.
func pprofRoutes(mux *http.ServeMux) {
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", redactedCmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
}

// redactedCmdline is pprof.Cmdline without the secrets.
func redactedCmdline(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte(strings.Join(RedactArgs(os.Args), "\x00")))
}
