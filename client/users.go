package client

// The cluster's SCRAM users over Kafka's AlterUserScramCredentials and
// DescribeUserScramCredentials (kadm): add (or change) a user's password
// for one mechanism, delete a user, list users. The password is salted
// and hashed here, by kadm, as Kafka's protocol has it; only the salted
// password travels, and the node keeps only StoredKey and ServerKey.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// ScramCredentialInfo is one of a user's credentials: its mechanism and
// iteration count (never the keys).
type ScramCredentialInfo struct {
	Mechanism  string `json:"mechanism"`
	Iterations int32  `json:"iterations"`
}

// ScramUser is a user of the cluster and its credentials.
type ScramUser struct {
	Name        string                `json:"name"`
	Credentials []ScramCredentialInfo `json:"credentials"`
}

// ScramUsers is what ListUsers returns.
type ScramUsers []ScramUser

// WriteTable prints one row per user: its name and credentials.
func (us ScramUsers) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "USER\tCREDENTIALS")
	for _, u := range us {
		var creds []string
		for _, c := range u.Credentials {
			creds = append(creds, fmt.Sprintf("%s (%d iterations)", c.Mechanism, c.Iterations))
		}
		fmt.Fprintf(tw, "%s\t%s\n", u.Name, strings.Join(creds, ", "))
	}
	return tw.Flush()
}

// ScramMechanism parses SCRAM-SHA-256 or SCRAM-SHA-512 (any case).
func ScramMechanism(name string) (kadm.ScramMechanism, error) {
	switch strings.ToUpper(name) {
	case "SCRAM-SHA-256":
		return kadm.ScramSha256, nil
	case "SCRAM-SHA-512":
		return kadm.ScramSha512, nil
	}
	return 0, fmt.Errorf("mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", name)
}

// AddUser sets user's password for mechanism cluster-wide, creating the
// user or changing its password.
func (g Config) AddUser(ctx context.Context, user, password, mechanism string, iterations int32) error {
	mech, err := ScramMechanism(mechanism)
	if err != nil {
		return err
	}
	if password == "" {
		return errors.New("empty password")
	}
	ctx, adm, done, err := g.boundedAdmin(ctx)
	if err != nil {
		return err
	}
	defer done()
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: user, Mechanism: mech, Iterations: iterations, Password: password}})
	if err != nil {
		return fmt.Errorf("add user %s: %w", user, err)
	}
	if r := res[user]; r.Err != nil {
		return fmt.Errorf("add user %s: %w%s", user, r.Err, errSuffix(r.ErrMessage))
	}
	return nil
}

// DeleteUser deletes user's credentials, every mechanism's when
// mechanisms is empty, and returns the mechanisms deleted.
func (g Config) DeleteUser(ctx context.Context, user string, mechanisms []string) ([]string, error) {
	ctx, adm, done, err := g.boundedAdmin(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	var dels []kadm.DeleteSCRAM
	for _, m := range mechanisms {
		mech, err := ScramMechanism(m)
		if err != nil {
			return nil, err
		}
		dels = append(dels, kadm.DeleteSCRAM{User: user, Mechanism: mech})
	}
	if len(dels) == 0 {
		described, err := adm.DescribeUserSCRAMs(ctx, user)
		if err != nil {
			return nil, fmt.Errorf("describe user %s: %w", user, err)
		}
		d := described[user]
		if errors.Is(d.Err, kerr.ResourceNotFound) {
			return nil, fmt.Errorf("delete user %s: no such user", user)
		}
		if d.Err != nil {
			return nil, fmt.Errorf("describe user %s: %w%s", user, d.Err, errSuffix(d.ErrMessage))
		}
		for _, c := range d.CredInfos {
			dels = append(dels, kadm.DeleteSCRAM{User: user, Mechanism: c.Mechanism})
		}
	}
	res, err := adm.AlterUserSCRAMs(ctx, dels, nil)
	if err != nil {
		return nil, fmt.Errorf("delete user %s: %w", user, err)
	}
	if r := res[user]; r.Err != nil {
		return nil, fmt.Errorf("delete user %s: %w%s", user, r.Err, errSuffix(r.ErrMessage))
	}
	deleted := make([]string, len(dels))
	for i, d := range dels {
		deleted[i] = d.Mechanism.String()
	}
	return deleted, nil
}

// ListUsers lists the cluster's users, by name.
func (g Config) ListUsers(ctx context.Context) (ScramUsers, error) {
	ctx, adm, done, err := g.boundedAdmin(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	described, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	out := ScramUsers{}
	for _, d := range described.Sorted() {
		if d.Err != nil {
			return nil, fmt.Errorf("list users: %s: %w%s", d.User, d.Err, errSuffix(d.ErrMessage))
		}
		u := ScramUser{Name: d.User}
		for _, c := range d.CredInfos {
			u.Credentials = append(u.Credentials, ScramCredentialInfo{Mechanism: c.Mechanism.String(), Iterations: c.Iterations})
		}
		out = append(out, u)
	}
	return out, nil
}
