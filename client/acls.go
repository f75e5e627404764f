package client

// The cluster's ACLs over Kafka's CreateAcls, DescribeAcls and DeleteAcls:
// names as Kafka's tools print them (TOPIC, LITERAL, READ, ALLOW), parsed
// in any case with - or _ (transactional-id, describe_configs).

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ACL is one binding.
type ACL struct {
	ResourceType string `json:"resource_type"`
	Resource     string `json:"resource"`
	Pattern      string `json:"pattern"`
	Principal    string `json:"principal"`
	Host         string `json:"host"`
	Operation    string `json:"operation"`
	Permission   string `json:"permission"`
}

// ACLs is what ListACLs and DeleteACLs return.
type ACLs []ACL

// WriteTable prints one row per binding.
func (as ACLs) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RESOURCE_TYPE\tRESOURCE\tPATTERN\tPRINCIPAL\tHOST\tOPERATION\tPERMISSION")
	for _, a := range as {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.ResourceType, a.Resource, a.Pattern, a.Principal, a.Host, a.Operation, a.Permission)
	}
	return tw.Flush()
}

// ACLFilter selects bindings: empty strings and nil pointers match any;
// Pattern may also be MATCH (the bindings that apply to Resource).
type ACLFilter struct {
	ResourceType string
	Resource     *string
	Pattern      string
	Principal    *string
	Host         *string
	Operation    string
	Permission   string
}

type aclCodes struct {
	rt   kmsg.ACLResourceType
	pt   kmsg.ACLResourcePatternType
	op   kmsg.ACLOperation
	perm kmsg.ACLPermissionType
}

// parseACLCodes parses the names, "" as ANY (or as dflt* where given).
func parseACLCodes(rt, pt, op, perm string) (aclCodes, error) {
	c := aclCodes{kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny}
	var err error
	if rt != "" {
		if c.rt, err = kmsg.ParseACLResourceType(rt); err != nil {
			return c, fmt.Errorf("resource type %q: want topic, group, cluster or transactional-id", rt)
		}
	}
	if pt != "" {
		if c.pt, err = kmsg.ParseACLResourcePatternType(pt); err != nil {
			return c, fmt.Errorf("pattern %q: want literal or prefixed (match or any to select)", pt)
		}
	}
	if op != "" {
		if c.op, err = kmsg.ParseACLOperation(op); err != nil {
			return c, fmt.Errorf("operation %q: want all, read, write, create, delete, alter, describe, cluster-action, describe-configs, alter-configs or idempotent-write", op)
		}
	}
	if perm != "" {
		if c.perm, err = kmsg.ParseACLPermissionType(perm); err != nil {
			return c, fmt.Errorf("permission %q: want allow or deny", perm)
		}
	}
	return c, nil
}

// CreateACLs adds bindings cluster-wide: every field must be concrete
// (no ANY); an empty host is "*", an empty pattern LITERAL, a cluster's
// name "kafka-cluster".
func (g Config) CreateACLs(ctx context.Context, acls []ACL) error {
	req := kmsg.NewPtrCreateACLsRequest()
	for _, a := range acls {
		if a.Host == "" {
			a.Host = "*"
		}
		if a.Pattern == "" {
			a.Pattern = "literal"
		}
		c, err := parseACLCodes(a.ResourceType, a.Pattern, a.Operation, a.Permission)
		if err != nil {
			return err
		}
		if c.rt == kmsg.ACLResourceTypeCluster && a.Resource == "" {
			a.Resource = "kafka-cluster"
		}
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = c.rt, a.Resource, c.pt
		cr.Principal, cr.Host, cr.Operation, cr.PermissionType = a.Principal, a.Host, c.op, c.perm
		req.Creations = append(req.Creations, cr)
	}
	cl, err := g.Kafka(ctx)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, g.Timeout)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("create ACLs: %w", err)
	}
	for i, r := range resp.Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil && i < len(acls) {
			return fmt.Errorf("create ACL %+v: %w%s", acls[i], err, errSuffix(deref(r.ErrorMessage)))
		}
	}
	return nil
}

// ListACLs lists the bindings f selects.
func (g Config) ListACLs(ctx context.Context, f ACLFilter) (ACLs, error) {
	c, err := parseACLCodes(f.ResourceType, f.Pattern, f.Operation, f.Permission)
	if err != nil {
		return nil, err
	}
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourceName, req.ResourcePatternType = c.rt, f.Resource, c.pt
	req.Principal, req.Host, req.Operation, req.PermissionType = f.Principal, f.Host, c.op, c.perm
	cl, err := g.Kafka(ctx)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, g.Timeout)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("list ACLs: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("list ACLs: %w%s", err, errSuffix(deref(resp.ErrorMessage)))
	}
	out := ACLs{}
	for _, r := range resp.Resources {
		for _, a := range r.ACLs {
			out = append(out, ACL{ResourceType: r.ResourceType.String(), Resource: r.ResourceName, Pattern: r.ResourcePatternType.String(),
				Principal: a.Principal, Host: a.Host, Operation: a.Operation.String(), Permission: a.PermissionType.String()})
		}
	}
	return out, nil
}

// DeleteACLs deletes the bindings f selects and returns them.
func (g Config) DeleteACLs(ctx context.Context, f ACLFilter) (ACLs, error) {
	c, err := parseACLCodes(f.ResourceType, f.Pattern, f.Operation, f.Permission)
	if err != nil {
		return nil, err
	}
	rf := kmsg.NewDeleteACLsRequestFilter()
	rf.ResourceType, rf.ResourceName, rf.ResourcePatternType = c.rt, f.Resource, c.pt
	rf.Principal, rf.Host, rf.Operation, rf.PermissionType = f.Principal, f.Host, c.op, c.perm
	req := kmsg.NewPtrDeleteACLsRequest()
	req.Filters = []kmsg.DeleteACLsRequestFilter{rf}
	cl, err := g.Kafka(ctx)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, g.Timeout)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("delete ACLs: %w", err)
	}
	out := ACLs{}
	for _, r := range resp.Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return nil, fmt.Errorf("delete ACLs: %w%s", err, errSuffix(deref(r.ErrorMessage)))
		}
		for _, m := range r.MatchingACLs {
			out = append(out, ACL{ResourceType: m.ResourceType.String(), Resource: m.ResourceName, Pattern: m.ResourcePatternType.String(),
				Principal: m.Principal, Host: m.Host, Operation: m.Operation.String(), Permission: m.PermissionType.String()})
		}
	}
	return out, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
