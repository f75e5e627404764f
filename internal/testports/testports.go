// Package testports hands tests loopback ports for processes they start,
// which bind them a moment later.
//
// A port the kernel picked (a listen on port 0) lies in the ephemeral
// range (/proc/sys/net/ipv4/ip_local_port_range), from which the kernel
// also picks every other process's port-0 listener and every outgoing
// connection's source port: in the moment between the check and the
// process's own bind, another test's node or a client's connection can
// take it ("bind: address already in use", seen in CI). Ports are
// therefore picked below the ephemeral range, where only an explicit bind
// lands, checked free for TCP and UDP (gossip binds both), and never
// handed out twice by one test binary.
package testports

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

const lowest = 20000

var (
	mu        sync.Mutex
	handedOut = map[int]bool{}
)

// Free is a loopback address, 127.0.0.1:PORT, free a moment ago.
func Free(t testing.TB) string {
	t.Helper()
	return "127.0.0.1:" + strconv.Itoa(FreePort(t))
}

// FreePort is a loopback port free a moment ago for TCP and UDP.
func FreePort(t testing.TB) int {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	high := ephemeralLow()
	for range 10000 {
		port := lowest + rand.IntN(high-lowest)
		if handedOut[port] || !free(port) {
			continue
		}
		handedOut[port] = true
		return port
	}
	t.Fatalf("no free loopback port in [%d, %d)", lowest, high)
	return 0
}

func free(port int) bool {
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	ln.Close()
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return false
	}
	pc.Close()
	return true
}

// ephemeralLow is the first port of the kernel's ephemeral range (32768,
// Linux's default, when it cannot be read or leaves too little below).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) < 1 {
		return 32768
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil || lo < lowest+1000 {
		return 32768
	}
	return lo
}
