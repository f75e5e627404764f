package tier_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/spool-log/spool/node/tier"
	"github.com/spool-log/spool/node/tier/tiertest"
)

// TestS3AgainstSeaweed runs the store's operations against a real
// S3-compatible server: a put, ranged and whole reads, a listing by
// prefix, a delete (twice: a missing key is no error) and a read of a
// missing key (ErrNotFound).
func TestS3AgainstSeaweed(t *testing.T) {
	sw := tiertest.Start(t)
	st := sw.Store(t, "pfx/")
	ctx := context.Background()
	body := bytes.Repeat([]byte("0123456789"), 100_000) // 1 MB
	if err := st.Put(ctx, "pfx/a/1", bytes.NewReader(body), int64(len(body))); err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, "pfx/a/2", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	rc, err := st.GetRange(ctx, "pfx/a/1", 12345, 1000)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, body[12345:13345]) {
		t.Fatalf("ranged read: %d bytes, err %v", len(got), err)
	}
	rc, err = st.GetRange(ctx, "pfx/a/1", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	got, _ = io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(got, body) {
		t.Fatalf("whole read: %d bytes", len(got))
	}
	objs, err := st.List(ctx, "pfx/a/")
	if err != nil || len(objs) != 2 || objs[0].Key != "pfx/a/1" || objs[0].Size != int64(len(body)) {
		t.Fatalf("list: %+v, %v", objs, err)
	}
	for range 2 {
		if err := st.Delete(ctx, "pfx/a/1"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.GetRange(ctx, "pfx/a/1", 0, 10); !errors.Is(err, tier.ErrNotFound) {
		t.Fatalf("read of a deleted key: %v, want ErrNotFound", err)
	}
	// Wrong credentials are refused, and the error carries no secret.
	bad, err := tier.NewS3(sw.Config(""), tier.Credentials{AccessKeyID: tiertest.AccessKey, SecretAccessKey: "wrong-secret-value"})
	if err != nil {
		t.Fatal(err)
	}
	err = bad.Put(ctx, "pfx/b", strings.NewReader("x"), 1)
	if err == nil || strings.Contains(err.Error(), "wrong-secret-value") || strings.Contains(err.Error(), tiertest.SecretKey) {
		t.Fatalf("put with a wrong secret: %v", err)
	}
}
