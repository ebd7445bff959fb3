package client

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"math/big"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

func TestParseChallenges(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want challenges
	}{
		{[]string{`Bearer resource_metadata="https://a/b", scope="x y"`},
			challenges{"bearer": {"resource_metadata": "https://a/b", "scope": "x y"}}},
		{[]string{`Bearer error="insufficient_scope", scope="w", error_description="say \"no\""`},
			challenges{"bearer": {"error": "insufficient_scope", "scope": "w", "error_description": `say "no"`}}},
		{[]string{`DPoP error="use_dpop_nonce", algs="ES256", Bearer realm=x`},
			challenges{"dpop": {"error": "use_dpop_nonce", "algs": "ES256"}, "bearer": {"realm": "x"}}},
		{[]string{`Basic`, `Bearer`}, challenges{"basic": {}, "bearer": {}}},
		{[]string{`scope="orphan"`}, challenges{}},
	} {
		if got := parseChallenges(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseChallenges(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// A DPoP proof is a JWS that verifies with the key in its own header, and carries the
// claims RFC 9449 §4.2 asks for: htu without the query, the nonce, ath of the token.
func TestDPoPProof(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	d := &dpopSigner{key: key, nonces: map[string]string{"https://rs.example": "n-1"}}
	u, _ := url.Parse("https://rs.example/mcp?x=1#f")
	proof, err := d.proof("POST", u, "tok")
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(proof, ".")
	if len(parts) != 3 {
		t.Fatalf("proof %q is not a compact JWS", proof)
	}
	var header struct {
		Typ, Alg string
		JWK      map[string]string
	}
	var claims map[string]any
	hb, _ := b64.DecodeString(parts[0])
	cb, _ := b64.DecodeString(parts[1])
	if json.Unmarshal(hb, &header) != nil || json.Unmarshal(cb, &claims) != nil {
		t.Fatalf("undecodable proof %q", proof)
	}
	if header.Typ != "dpop+jwt" || header.Alg != "ES256" || header.JWK["kty"] != "EC" || header.JWK["d"] != "" {
		t.Fatalf("header %+v", header)
	}
	x, _ := b64.DecodeString(header.JWK["x"])
	y, _ := b64.DecodeString(header.JWK["y"])
	pub := &ecdsa.PublicKey{Curve: elliptic.P256(), X: new(big.Int).SetBytes(x), Y: new(big.Int).SetBytes(y)}
	sig, _ := b64.DecodeString(parts[2])
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if len(sig) != 64 || !ecdsa.Verify(pub, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		t.Fatal("the proof does not verify with the key in its header")
	}
	ath := sha256.Sum256([]byte("tok"))
	if claims["htm"] != "POST" || claims["htu"] != "https://rs.example/mcp" || claims["nonce"] != "n-1" ||
		claims["ath"] != b64.EncodeToString(ath[:]) || claims["jti"] == "" || claims["iat"] == nil {
		t.Fatalf("claims %v", claims)
	}
	again, _ := d.proof("POST", u, "tok")
	if again == proof {
		t.Fatal("two proofs are the same: each must be fresh")
	}
}

func TestSignJWTEd25519(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	jwt, err := signJWT(priv, map[string]any{}, map[string]any{"iss": "c"})
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(jwt, ".")
	sig, _ := b64.DecodeString(parts[2])
	if !ed25519.Verify(pub, []byte(parts[0]+"."+parts[1]), sig) {
		t.Fatal("the EdDSA JWT does not verify")
	}
}

func TestResourceCovers(t *testing.T) {
	u, _ := url.Parse("https://mcp.example.com/tenant/mcp")
	for res, want := range map[string]bool{
		"https://mcp.example.com/tenant/mcp": true, "https://mcp.example.com": true, "https://MCP.example.com/tenant": true,
		"https://mcp.example.com/ten": false, "https://evil.example.com/tenant/mcp": false, "http://mcp.example.com/tenant/mcp": false,
		"https://mcp.example.com/tenant/mcp/more": false,
	} {
		if got := resourceCovers(res, u); got != want {
			t.Errorf("resourceCovers(%q) = %v, want %v", res, got, want)
		}
	}
}
