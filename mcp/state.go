package mcp

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// requestState is what a 2026-07-28 input_required result asks the client to echo. It is
// signed, so a client can carry it but not change it, and it is bound to the request it was
// issued for: the method, the tool, prompt or resource, the arguments, the principal, and an
// expiry. It holds the answers gathered in earlier rounds, since a retry carries only the
// newest ones.
type requestState struct {
	V         int                        `json:"v"`
	Method    string                     `json:"m"`
	Target    string                     `json:"t"`
	Args      string                     `json:"h"`
	Principal string                     `json:"p,omitempty"`
	Expires   int64                      `json:"e"`
	Answers   map[string]json.RawMessage `json:"a,omitempty"`
}

var errBadState = errors.New("requestState is not valid: it was altered, issued for another request, or has expired; send the original request again without it")

func randomKey() []byte {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		panic("mcp: no randomness for the requestState key: " + err.Error())
	}
	return k
}

func (s *Server) sealState(st *requestState) string {
	st.V = 1
	st.Expires = time.Now().Add(s.opts.StateTTL).Unix()
	payload, _ := json.Marshal(st)
	mac := hmac.New(sha256.New, s.stateKey)
	mac.Write(payload)
	return base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// openState verifies a requestState and checks that it belongs to this request.
func (s *Server) openState(token string, want *requestState) (*requestState, error) {
	body, sig, ok := strings.Cut(token, ".")
	if !ok {
		return nil, errBadState
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(body)
	got, err2 := base64.RawURLEncoding.DecodeString(sig)
	if err1 != nil || err2 != nil {
		return nil, errBadState
	}
	mac := hmac.New(sha256.New, s.stateKey)
	mac.Write(payload)
	if !hmac.Equal(mac.Sum(nil), got) {
		return nil, errBadState
	}
	var st requestState
	if json.Unmarshal(payload, &st) != nil || st.V != 1 || time.Now().Unix() > st.Expires ||
		st.Method != want.Method || st.Target != want.Target || st.Args != want.Args || st.Principal != want.Principal {
		return nil, errBadState
	}
	return &st, nil
}

// argsDigest hashes arguments in a canonical form, so that a client that re-encodes the
// original arguments (other key order, other spacing) still matches.
func argsDigest(args json.RawMessage) string {
	var v any
	if len(args) > 0 {
		json.Unmarshal(args, &v)
	}
	canon, _ := json.Marshal(v)
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:])
}
