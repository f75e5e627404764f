package sasl

// The server side of SCRAM (RFC 5802, with SHA-256 and SHA-512 as RFC 7677
// and Kafka's KIP-84 use them), two round trips:
//
//	client-first  n,,n=USER,r=CNONCE          (gs2 header "n,," or "y,,")
//	server-first  r=CNONCE+SNONCE,s=SALT,i=ITERATIONS
//	client-final  c=biws,r=CNONCE+SNONCE,p=PROOF
//	server-final  v=SERVER_SIGNATURE
//
// Channel binding ("p=" in the gs2 header) and Kafka's delegation tokens
// (the tokenauth extension) are refused. An unknown user gets a
// server-first made from a salt derived from the user name, and fails at
// the proof like a wrong password, so the exchange tells nobody which
// users exist.

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
)

// maxScramMessage bounds a client message.
const maxScramMessage = 4096

type scramExchange struct {
	mechanism string
	store     *Store
	step      int

	user            string
	known           bool
	cred            ScramCredential
	gs2Header       string
	clientFirstBare string
	serverFirst     string
	nonce           string
}

func (s *scramExchange) Step(msg []byte) ([]byte, bool, error) {
	if len(msg) > maxScramMessage {
		return nil, false, ErrAuthenticationFailed
	}
	s.step++
	switch s.step {
	case 1:
		return s.clientFirst(string(msg))
	case 2:
		return s.clientFinal(string(msg))
	}
	return nil, false, ErrAuthenticationFailed
}

func (s *scramExchange) User() string { return s.user }

func (s *scramExchange) clientFirst(msg string) ([]byte, bool, error) {
	// gs2-header: cbind-flag "," [authzid] ","
	parts := strings.SplitN(msg, ",", 3)
	if len(parts) != 3 || (parts[0] != "n" && parts[0] != "y") {
		return nil, false, ErrAuthenticationFailed
	}
	if parts[1] != "" {
		authz, ok := strings.CutPrefix(parts[1], "a=")
		if !ok {
			return nil, false, ErrAuthenticationFailed
		}
		s.gs2Header = parts[0] + "," + parts[1] + ","
		parts[1] = authz
	} else {
		s.gs2Header = parts[0] + ",,"
	}
	s.clientFirstBare = parts[2]
	attrs := strings.Split(parts[2], ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "n=") || !strings.HasPrefix(attrs[1], "r=") {
		return nil, false, ErrAuthenticationFailed
	}
	for _, ext := range attrs[2:] {
		if strings.HasPrefix(ext, "tokenauth=") {
			return nil, false, ErrAuthenticationFailed
		}
	}
	user, ok := decodeSaslName(attrs[0][2:])
	if !ok || !validUsername(user) {
		return nil, false, ErrAuthenticationFailed
	}
	authz, _ := decodeSaslName(parts[1])
	if authz != "" && authz != user {
		return nil, false, ErrAuthenticationFailed
	}
	clientNonce := attrs[1][2:]
	if clientNonce == "" || strings.ContainsAny(clientNonce, ",") {
		return nil, false, ErrAuthenticationFailed
	}
	s.user = user
	s.cred, s.known = s.store.Lookup(user, s.mechanism)
	if !s.known {
		s.cred = decoyCredential(s.mechanism, user)
	}
	serverNonce := make([]byte, 24)
	if _, err := rand.Read(serverNonce); err != nil {
		return nil, false, err
	}
	s.nonce = clientNonce + base64.RawURLEncoding.EncodeToString(serverNonce)
	s.serverFirst = "r=" + s.nonce + ",s=" + base64.StdEncoding.EncodeToString(s.cred.Salt) + ",i=" + strconv.Itoa(s.cred.Iterations)
	return []byte(s.serverFirst), false, nil
}

func (s *scramExchange) clientFinal(msg string) ([]byte, bool, error) {
	withoutProof, proofAttr, ok := cutLast(msg, ",p=")
	if !ok {
		return nil, false, ErrAuthenticationFailed
	}
	attrs := strings.Split(withoutProof, ",")
	// The nonce must end with the one the server sent, as Kafka checks it
	// (ScramSaslServer): librdkafka sends the client nonce, then the whole
	// server nonce, which begins with the client nonce again. The proof
	// covers what the client sent, so this weakens nothing.
	if len(attrs) < 2 || attrs[0] != "c="+base64.StdEncoding.EncodeToString([]byte(s.gs2Header)) ||
		!strings.HasPrefix(attrs[1], "r=") || !strings.HasSuffix(attrs[1], s.nonce) {
		return nil, false, ErrAuthenticationFailed
	}
	proof, err := base64.StdEncoding.DecodeString(proofAttr)
	h := scramHash(s.mechanism)
	if err != nil || len(proof) != h().Size() {
		return nil, false, ErrAuthenticationFailed
	}
	authMessage := []byte(s.clientFirstBare + "," + s.serverFirst + "," + withoutProof)
	clientSignature := hmacOf(h, s.cred.StoredKey, authMessage)
	clientKey := make([]byte, len(proof))
	for i := range proof {
		clientKey[i] = proof[i] ^ clientSignature[i]
	}
	sum := h()
	sum.Write(clientKey)
	if !hmac.Equal(sum.Sum(nil), s.cred.StoredKey) || !s.known {
		return nil, false, ErrAuthenticationFailed
	}
	serverSignature := hmacOf(h, s.cred.ServerKey, authMessage)
	return []byte("v=" + base64.StdEncoding.EncodeToString(serverSignature)), true, nil
}

// decoyCredential stands in for an unknown user: the same salt for the
// same name every time (a random one would tell a repeat prober the user
// does not exist), keys that match no password.
func decoyCredential(mechanism, user string) ScramCredential {
	salt := sha256.Sum256([]byte("spool-scram-decoy\x00" + mechanism + "\x00" + user + decoySecret))
	size := scramHash(mechanism)().Size()
	return ScramCredential{Mechanism: mechanism, Iterations: MinIteration, Salt: salt[:],
		StoredKey: bytes.Repeat([]byte{0}, size), ServerKey: bytes.Repeat([]byte{0}, size)}
}

// decoySecret keeps decoy salts unpredictable across processes.
var decoySecret = func() string {
	b := make([]byte, 16)
	rand.Read(b)
	return string(b)
}()

// decodeSaslName undoes RFC 5802's escaping of ',' and '=' in names.
func decodeSaslName(s string) (string, bool) {
	if !strings.Contains(s, "=") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", false
		}
		i += 2
	}
	return b.String(), true
}

// cutLast splits s around the last sep.
func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}
