package oauthmeta

import (
	"net/url"
	"slices"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestMetadataURLs(t *testing.T) {
	for issuer, want := range map[string][]string{
		"https://as.example.com": {"https://as.example.com/.well-known/oauth-authorization-server",
			"https://as.example.com/.well-known/openid-configuration"},
		"https://as.example.com/": {"https://as.example.com/.well-known/oauth-authorization-server",
			"https://as.example.com/.well-known/openid-configuration"},
		"https://as.example.com/tenant/a b": {"https://as.example.com/.well-known/oauth-authorization-server/tenant/a%20b",
			"https://as.example.com/.well-known/openid-configuration/tenant/a%20b",
			"https://as.example.com/tenant/a%20b/.well-known/openid-configuration"},
	} {
		u, err := url.Parse(issuer)
		if err != nil {
			t.Fatal(err)
		}
		if got := MetadataURLs(u); !slices.Equal(got, want) {
			t.Errorf("MetadataURLs(%s) = %q, want %q", issuer, got, want)
		}
	}
}

func TestIsLoopback(t *testing.T) {
	for host, want := range map[string]bool{"localhost": true, "LOCALHOST": true, "127.0.0.1": true, "127.8.9.10": true,
		"::1": true, "[::1]": true, "example.com": false, "10.0.0.1": false, "": false, "localhost.example.com": false} {
		if got := IsLoopback(host); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", host, got, want)
		}
	}
}
