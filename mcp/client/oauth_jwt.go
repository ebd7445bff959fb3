package client

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
)

// The JWTs the client signs itself: private_key_jwt client assertions (RFC 7523 §2.2)
// and DPoP proofs (RFC 9449 §4.2). Compact JWS with the asymmetric algorithms of the key
// (RFC 7518 §3): ES256/ES384/ES512 for ECDSA, RS256 for RSA, EdDSA for Ed25519.

var b64 = base64.RawURLEncoding

// jwsAlg is the JWS algorithm a key signs with.
func jwsAlg(key crypto.Signer) (string, error) {
	switch pub := key.Public().(type) {
	case *ecdsa.PublicKey:
		switch pub.Curve {
		case elliptic.P256():
			return "ES256", nil
		case elliptic.P384():
			return "ES384", nil
		case elliptic.P521():
			return "ES512", nil
		}
	case *rsa.PublicKey:
		return "RS256", nil
	case ed25519.PublicKey:
		return "EdDSA", nil
	}
	return "", authErrorf("a %T cannot sign JWTs: use an ECDSA, RSA or Ed25519 key", key.Public())
}

// signJWT signs claims with key; header gets alg, and typ when typ is not empty.
func signJWT(key crypto.Signer, header, claims map[string]any) (string, error) {
	alg, err := jwsAlg(key)
	if err != nil {
		return "", err
	}
	header["alg"] = alg
	h, err := json.Marshal(header)
	if err != nil {
		return "", err
	}
	c, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	input := b64.EncodeToString(h) + "." + b64.EncodeToString(c)
	var sig []byte
	switch alg {
	case "EdDSA":
		sig, err = key.Sign(rand.Reader, []byte(input), crypto.Hash(0))
	case "RS256":
		d := sha256.Sum256([]byte(input))
		sig, err = key.Sign(rand.Reader, d[:], crypto.SHA256)
	default: // ECDSA: the signer answers ASN.1; JWS wants r and s, each the curve's size.
		pub := key.Public().(*ecdsa.PublicKey)
		var digest []byte
		var hash crypto.Hash
		switch alg {
		case "ES256":
			d := sha256.Sum256([]byte(input))
			digest, hash = d[:], crypto.SHA256
		case "ES384":
			d := sha512.Sum384([]byte(input))
			digest, hash = d[:], crypto.SHA384
		default:
			d := sha512.Sum512([]byte(input))
			digest, hash = d[:], crypto.SHA512
		}
		var der []byte
		if der, err = key.Sign(rand.Reader, digest, hash); err == nil {
			var rs struct{ R, S *big.Int }
			if _, err = asn1.Unmarshal(der, &rs); err == nil {
				size := (pub.Curve.Params().BitSize + 7) / 8
				sig = make([]byte, 2*size)
				rs.R.FillBytes(sig[:size])
				rs.S.FillBytes(sig[size:])
			}
		}
	}
	if err != nil {
		return "", fmt.Errorf("%w: signing a JWT: %w", ErrAuthorization, err)
	}
	return input + "." + b64.EncodeToString(sig), nil
}

// publicJWK is key's public half as a JWK (RFC 7517), its members in the order RFC 7638
// hashes them for the thumbprint.
func publicJWK(key crypto.Signer) (map[string]any, error) {
	switch pub := key.Public().(type) {
	case *ecdsa.PublicKey:
		size := (pub.Curve.Params().BitSize + 7) / 8
		x, y := make([]byte, size), make([]byte, size)
		pub.X.FillBytes(x)
		pub.Y.FillBytes(y)
		return map[string]any{"crv": pub.Curve.Params().Name, "kty": "EC", "x": b64.EncodeToString(x), "y": b64.EncodeToString(y)}, nil
	case *rsa.PublicKey:
		return map[string]any{"e": b64.EncodeToString(big.NewInt(int64(pub.E)).Bytes()), "kty": "RSA", "n": b64.EncodeToString(pub.N.Bytes())}, nil
	case ed25519.PublicKey:
		return map[string]any{"crv": "Ed25519", "kty": "OKP", "x": b64.EncodeToString(pub)}, nil
	}
	return nil, authErrorf("a %T has no JWK form: use an ECDSA, RSA or Ed25519 key", key.Public())
}

// randomID is a fresh jti.
func randomID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return b64.EncodeToString(b)
}
