package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/wire"
)

// DescribeUserScramCredentials: v0
//
// Behavior:
// * Lists the cluster's SCRAM users (the membership catalog's, the same on
//   every node once gossip has spread them) with each credential's
//   mechanism and iteration count; never salts or keys. No users named
//   means every user. Users of a node's credentials file or its bootstrap
//   user are that node's alone and not listed.
// * Authorization: DESCRIBE on the cluster, else
//   CLUSTER_AUTHORIZATION_FAILED.
// * RESOURCE_NOT_FOUND for a named user with no credential;
//   DUPLICATE_RESOURCE for a user named twice (every result for it).
//
// Version notes:
// * v0: flexible versions (the only version)

func (n *Node) handleDescribeUserScramCredentials(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if !n.access.Requester(ctx, wreq).MayCluster(kmsg.ACLOperationDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr("DESCRIBE on the cluster is needed to describe users")
		return resp
	}
	byUser := map[string][]membership.UserEntry{}
	var names []string
	for _, u := range n.agent.Users() {
		if byUser[u.Name] == nil {
			names = append(names, u.Name)
		}
		byUser[u.Name] = append(byUser[u.Name], u)
	}
	result := func(name string) kmsg.DescribeUserSCRAMCredentialsResponseResult {
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = name
		for _, u := range byUser[name] {
			info := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
			info.Mechanism, info.Iterations = scramMechanismCode(u.Mechanism), int32(u.Iterations)
			r.CredentialInfos = append(r.CredentialInfos, info)
		}
		return r
	}
	if len(req.Users) == 0 { // null or empty: every user, as Kafka
		for _, name := range names {
			resp.Results = append(resp.Results, result(name))
		}
		return resp
	}
	asked := map[string]int{}
	for _, u := range req.Users {
		asked[u.Name]++
	}
	for _, u := range req.Users {
		r := result(u.Name)
		switch {
		case asked[u.Name] > 1:
			r.CredentialInfos = nil
			r.ErrorCode = kerr.DuplicateResource.Code
			r.ErrorMessage = kmsg.StringPtr("cannot describe the same user twice in one request")
		case len(r.CredentialInfos) == 0:
			r.ErrorCode = kerr.ResourceNotFound.Code
			r.ErrorMessage = kmsg.StringPtr("attempt to describe a user credential that does not exist")
		}
		resp.Results = append(resp.Results, r)
	}
	return resp
}

// Kafka's SCRAM mechanism codes (ScramMechanism: 1 and 2; 0 is unknown).
func scramMechanismCode(mechanism string) int8 {
	switch mechanism {
	case membership.ScramSHA256:
		return 1
	case membership.ScramSHA512:
		return 2
	}
	return 0
}

func scramMechanismName(code int8) (string, bool) {
	switch code {
	case 1:
		return membership.ScramSHA256, true
	case 2:
		return membership.ScramSHA512, true
	}
	return "", false
}
