package node

import (
	"context"
	"fmt"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/wire"
)

// What a produce or fetch pays for authorization per request: with no
// ACLs (the default's fast path) and with 100 ACLs to match.
func BenchmarkAuthorizeRequest(b *testing.B) {
	n := startNode(b, testConfig(b, b.TempDir()))
	req := &wire.Request{APIKey: int16(kmsg.Produce), RemoteAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5000}}
	ctx := context.Background()
	run := func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if !n.access.Requester(ctx, req).MayTopic(kmsg.ACLOperationWrite, "t-7") {
				b.Fatal("refused")
			}
		}
	}
	b.Run("no-acls", run)
	var acls []membership.ACLBinding
	for i := 0; i < 100; i++ {
		acls = append(acls, membership.ACLBinding{ResourceType: membership.ACLResourceTopic, ResourceName: fmt.Sprintf("t-%d", i),
			PatternType: membership.ACLPatternLiteral, Principal: "User:ANONYMOUS", Host: "*", Operation: int8(kmsg.ACLOperationWrite),
			Permission: membership.ACLPermissionAllow})
	}
	if err := n.Membership().CreateACLs(acls); err != nil {
		b.Fatal(err)
	}
	b.Run("100-acls", run)
}
