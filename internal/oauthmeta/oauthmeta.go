// Package oauthmeta holds what both ends of Relay's OAuth 2.1 agree on about authorization
// servers: where an issuer's metadata may be found, and which hosts may be reached over
// plain http.
package oauthmeta

import (
	"net"
	"net/url"
	"strings"
)

// MetadataURLs are where the metadata of issuer may be, in the order to try them: RFC 8414's
// well-known location (the well-known segment goes before the issuer's path), then OpenID
// Connect Discovery's in its path-inserted and its appended forms (MCP 2025-11-25,
// Authorization › Authorization Server Metadata Discovery). An issuer with no path has two.
func MetadataURLs(issuer *url.URL) []string {
	origin := issuer.Scheme + "://" + issuer.Host
	path := strings.TrimSuffix(issuer.EscapedPath(), "/")
	if path == "" {
		return []string{origin + "/.well-known/oauth-authorization-server", origin + "/.well-known/openid-configuration"}
	}
	return []string{origin + "/.well-known/oauth-authorization-server" + path,
		origin + "/.well-known/openid-configuration" + path, origin + path + "/.well-known/openid-configuration"}
}

// IsLoopback reports whether host (a name, or an address, in brackets or not) is localhost
// or a loopback address (127.0.0.0/8, ::1): the hosts OAuth 2.1 lets be reached over http.
func IsLoopback(host string) bool {
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
