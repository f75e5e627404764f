package sasl

import (
	"bytes"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/sha512"
	"hash"
	"testing"
)

// A credential made from the salted password, as AlterUserScramCredentials
// delivers it, is the one made from the password itself.
func TestCredentialFromSalted(t *testing.T) {
	for mech, h := range map[string]func() hash.Hash{ScramSHA256: sha256.New, ScramSHA512: sha512.New} {
		salt := []byte("some salt")
		want, err := newScramCredential(mech, "pw", salt, 8192)
		if err != nil {
			t.Fatal(err)
		}
		salted, err := pbkdf2.Key(h, "pw", salt, 8192, h().Size())
		if err != nil {
			t.Fatal(err)
		}
		got, err := CredentialFromSalted(mech, salt, salted, 8192)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.StoredKey, want.StoredKey) || !bytes.Equal(got.ServerKey, want.ServerKey) || !got.checkPassword("pw") {
			t.Errorf("%s: credential from the salted password differs from the password's", mech)
		}
		if _, err := CredentialFromSalted(mech, salt, salted, 4095); err == nil {
			t.Errorf("%s: 4095 iterations accepted", mech)
		}
		if _, err := CredentialFromSalted(mech, nil, salted, 8192); err == nil {
			t.Errorf("%s: empty salt accepted", mech)
		}
	}
	if _, err := CredentialFromSalted(Plain, []byte("s"), []byte("x"), 8192); err == nil {
		t.Error("PLAIN accepted as a SCRAM mechanism")
	}
}
