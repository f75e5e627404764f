package tier

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadCredentials(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	c := DefaultStoreConfig()
	if _, err := LoadCredentials(c, getenv); err == nil {
		t.Fatal("no credentials anywhere, loaded")
	}
	env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"] = "aws-id", "aws-secret"
	if cr, err := LoadCredentials(c, getenv); err != nil || cr.AccessKeyID != "aws-id" {
		t.Fatalf("%v %v", cr, err)
	}
	env["SPOOL_S3_ACCESS_KEY_ID"], env["SPOOL_S3_SECRET_ACCESS_KEY"] = "spool-id", "spool-secret"
	cr, err := LoadCredentials(c, getenv)
	if err != nil || cr.AccessKeyID != "spool-id" || cr.SecretAccessKey != "spool-secret" {
		t.Fatalf("%v %v", cr, err)
	}
	for _, s := range []string{fmt.Sprint(cr), fmt.Sprintf("%+v", cr), fmt.Sprintf("%#v", cr)} {
		if strings.Contains(s, "spool-secret") {
			t.Fatalf("credentials printed with the secret: %s", s)
		}
	}
	dir := t.TempDir()
	c.CredentialsFile = filepath.Join(dir, "creds")
	os.WriteFile(c.CredentialsFile, []byte("# test\naccess_key_id = file-id\nsecret_access_key=file-secret\n"), 0o600)
	if cr, err := LoadCredentials(c, getenv); err != nil || cr.AccessKeyID != "file-id" || cr.SecretAccessKey != "file-secret" {
		t.Fatalf("%v %v", cr, err)
	}
	os.WriteFile(c.CredentialsFile, []byte("secret_access_key=hunter2-value\nbogus\n"), 0o600)
	_, err = LoadCredentials(c, getenv)
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("bad file: %v", err)
	}
}

func TestStoreConfigValidate(t *testing.T) {
	c := DefaultStoreConfig()
	if err := c.Validate(); err != nil || c.Enabled() {
		t.Fatalf("default: %v %v", err, c.Enabled())
	}
	c.Endpoint, c.Bucket = "127.0.0.1:8333", "spool"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []func(*StoreConfig){
		func(c *StoreConfig) { c.Endpoint = "http://x:1" },
		func(c *StoreConfig) { c.Bucket = "Bad_Bucket" },
		func(c *StoreConfig) { c.Prefix = "../x" },
		func(c *StoreConfig) { c.RequestTimeout = 0 },
	} {
		b := c
		bad(&b)
		if err := b.Validate(); err == nil {
			t.Errorf("%+v validated", b)
		}
	}
	if s := c.String(); !strings.Contains(s, "127.0.0.1:8333") {
		t.Fatal(s)
	}
}
