package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/relayrt/relay/supervise"
)

// Config is a gateway's configuration: its upstream servers, in the order the file lists
// them (which decides who serves a resource URI that two of them list).
type Config struct {
	Servers []Server
}

// Server is one upstream of the configuration: a local command (Command set) or a remote
// server (URL set).
type Server struct {
	// Name is the entry's key in the file.
	Name string
	// Command, Args, Env and Dir run a local stdio server as a supervised child. Env adds to
	// the gateway's own environment.
	Command string
	Args    []string
	Env     map[string]string
	Dir     string
	// URL and Headers reach a remote server over Streamable HTTP. A header value may name
	// environment variables of the gateway's as $VAR or ${VAR} (a token kept out of the
	// file); they are expanded when the gateway connects.
	URL     string
	Headers map[string]string
	// Prefix names the server's tools and prompts: PREFIX + separator + NAME. Empty: the
	// names are exposed as the server gives them.
	Prefix string
	// Tools and Prompts filter what the server offers, by its own names.
	Tools, Prompts Filter
	// Restart tunes the supervision of a local command.
	Restart Restart
	// OAuth, for a remote server, authorizes its requests with OAuth 2.1 once it answers
	// 401: the client credentials grant, with no user present.
	OAuth *OAuth
}

// OAuth is a remote server's OAuth 2.1 client: credentials registered with its
// authorization server, used with the client credentials grant (a gateway has no browser
// to send a user to). ClientSecret may name environment variables ($VAR, ${VAR}), expanded
// when the gateway connects, so that the secret stays out of the file.
type OAuth struct {
	ClientID, ClientSecret string
	// Issuer, when set, is the only authorization server the credentials are sent to.
	Issuer string
}

// Filter keeps the names that match an Allow glob (all, when Allow is empty) and no Deny
// glob. The globs are path.Match patterns: '*', '?', '[a-z]'.
type Filter struct {
	Allow, Deny []string
}

// Keeps reports whether the filter keeps name.
func (f Filter) Keeps(name string) bool {
	if len(f.Allow) > 0 && !slices.ContainsFunc(f.Allow, func(g string) bool { return globMatch(g, name) }) {
		return false
	}
	return !slices.ContainsFunc(f.Deny, func(g string) bool { return globMatch(g, name) })
}

func globMatch(glob, name string) bool {
	ok, _ := path.Match(glob, name) // the patterns were checked when the file was read
	return ok
}

// Restart is the supervision of a local upstream: the options of relay supervise.
type Restart struct {
	Spec  supervise.Spec         // Restart, MinBackoff, MaxBackoff, Intensity, Window, Unlimited
	Proxy supervise.ProxyOptions // Replay, Timeout, ProbeAfter, Drain
	// Watch names a file (the server's binary or script): when it changes, the child is
	// upgraded without downtime (supervise.Supervisor.Upgrade).
	Watch string
}

// The keys of the "relay" object and of its "restart" object.
var (
	relayKeys   = []string{"prefix", "tools", "prompts", "restart", "oauth"}
	oauthKeys   = []string{"clientId", "clientSecret", "issuer"}
	filterKeys  = []string{"allow", "deny"}
	restartKeys = []string{"policy", "limit", "backoff", "replay", "timeout", "probe", "stopWait", "drain", "watch"}
)

// ParseConfig reads a host's MCP configuration: {"mcpServers": {NAME: ENTRY}} (Claude
// Desktop, Cursor, and most hosts) or {"servers": {NAME: ENTRY}} (VS Code), or both, the
// first listed first. An ENTRY is {"command", "args", "env", "cwd"} or {"url", "headers"};
// "disabled": true leaves it out, and the keys hosts write for themselves ("type",
// "autoApprove", "timeout", ...) and every top-level key but these two are ignored.
// Relay's options are in the entry's "relay" object:
//
//	"relay": {"prefix": "gh", "tools": {"allow": ["get_*"], "deny": ["*_delete"]},
//	          "prompts": {"deny": ["*"]},
//	          "oauth": {"clientId": "gateway", "clientSecret": "${GH_SECRET}", "issuer": "https://auth.example.com"},
//	          "restart": {"policy": "always", "limit": "5/1m", "backoff": "100ms..30s",
//	                      "replay": "annotated", "timeout": "0s", "probe": "0s",
//	                      "stopWait": "2s", "drain": "5s", "watch": "/path/to/server"}}
//
// The prefix defaults to the entry's name with every character outside [a-zA-Z0-9_-] made
// '_'; "" exposes the server's names as they are. An unknown key inside "relay" is an error
// that names it.
func ParseConfig(data []byte) (*Config, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("the configuration is not a JSON object: %w", err)
	}
	cfg := &Config{}
	seen := map[string]bool{}
	prefixes := map[string]string{}
	for _, key := range []string{"mcpServers", "servers"} {
		raw, ok := top[key]
		if !ok || string(raw) == "null" {
			continue
		}
		names, entries, err := orderedObject(raw)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", key, err)
		}
		for i, name := range names {
			if seen[name] {
				return nil, fmt.Errorf("server %q is configured twice; give one of them another name", name)
			}
			seen[name] = true
			s, disabled, err := parseServer(name, entries[i])
			if err != nil {
				return nil, fmt.Errorf("server %q: %w", name, err)
			}
			if disabled {
				continue
			}
			if s.Prefix != "" {
				if other, dup := prefixes[s.Prefix]; dup {
					return nil, fmt.Errorf("servers %q and %q have the same prefix %q; set \"relay\": {\"prefix\": ...} on one of them", other, name, s.Prefix)
				}
				prefixes[s.Prefix] = name
			}
			cfg.Servers = append(cfg.Servers, s)
		}
	}
	if len(cfg.Servers) == 0 {
		return nil, errors.New(`the configuration names no server that is not disabled; put them under "mcpServers" (or VS Code's "servers")`)
	}
	return cfg, nil
}

// orderedObject returns the keys of a JSON object in the order they are written, and their
// values.
func orderedObject(raw json.RawMessage) ([]string, []json.RawMessage, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, errors.New("want an object of servers by name")
	}
	var names []string
	var values []json.RawMessage
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, nil, err
		}
		name, _ := t.(string) // an object's keys are strings
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil, nil, fmt.Errorf("server %q: %w", name, err)
		}
		names, values = append(names, name), append(values, v)
	}
	return names, values, nil
}

// parseServer reads one entry.
func parseServer(name string, raw json.RawMessage) (Server, bool, error) {
	s := Server{Name: name}
	var e struct {
		Command  *string           `json:"command"`
		Args     []string          `json:"args"`
		Env      map[string]string `json:"env"`
		Cwd      string            `json:"cwd"`
		URL      *string           `json:"url"`
		Headers  map[string]string `json:"headers"`
		Disabled bool              `json:"disabled"`
		Relay    json.RawMessage   `json:"relay"`
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		return s, false, fmt.Errorf("not a server entry: %w", err)
	}
	if e.Disabled {
		return s, true, nil
	}
	switch {
	case e.Command != nil && e.URL != nil:
		return s, false, errors.New(`has both "command" and "url"; a server is either a local command or a remote URL`)
	case e.Command != nil:
		if *e.Command == "" {
			return s, false, errors.New(`"command" is empty`)
		}
		s.Command, s.Args, s.Env, s.Dir = *e.Command, e.Args, e.Env, e.Cwd
	case e.URL != nil:
		if !strings.HasPrefix(*e.URL, "http://") && !strings.HasPrefix(*e.URL, "https://") {
			return s, false, fmt.Errorf(`"url" %q is not an http or https URL`, *e.URL)
		}
		s.URL, s.Headers = *e.URL, e.Headers
	default:
		return s, false, errors.New(`has neither "command" (a local server) nor "url" (a remote one)`)
	}
	s.Prefix = ValidName(name)
	if len(e.Relay) == 0 || string(e.Relay) == "null" {
		return s, false, nil
	}
	rel, err := strictObject(e.Relay, `"relay"`, relayKeys)
	if err != nil {
		return s, false, err
	}
	if raw, ok := rel["prefix"]; ok {
		if err := json.Unmarshal(raw, &s.Prefix); err != nil {
			return s, false, errors.New(`"relay"."prefix" must be a string`)
		}
		if s.Prefix != "" && ValidName(s.Prefix) != s.Prefix {
			return s, false, fmt.Errorf(`"relay"."prefix" %q may hold only letters, digits, '_' and '-'`, s.Prefix)
		}
	}
	if s.Tools, err = parseFilter(rel["tools"], `"relay"."tools"`); err != nil {
		return s, false, err
	}
	if s.Prompts, err = parseFilter(rel["prompts"], `"relay"."prompts"`); err != nil {
		return s, false, err
	}
	if raw, ok := rel["oauth"]; ok {
		if s.URL == "" {
			return s, false, errors.New(`"relay"."oauth" applies to a remote server ("url"), and this one is a local command`)
		}
		m, err := strictObject(raw, `"relay"."oauth"`, oauthKeys)
		if err != nil {
			return s, false, err
		}
		var o OAuth
		for key, dst := range map[string]*string{"clientId": &o.ClientID, "clientSecret": &o.ClientSecret, "issuer": &o.Issuer} {
			if v, ok := m[key]; ok {
				if err := json.Unmarshal(v, dst); err != nil {
					return s, false, fmt.Errorf(`"relay"."oauth".%s must be a string`, key)
				}
			}
		}
		if o.ClientID == "" {
			return s, false, errors.New(`"relay"."oauth" needs "clientId" (and "clientSecret"): the client credentials registered with the server's authorization server`)
		}
		s.OAuth = &o
	}
	if raw, ok := rel["restart"]; ok {
		if s.URL != "" {
			return s, false, errors.New(`"relay"."restart" applies to a local command, and this server is remote ("url")`)
		}
		if s.Restart, err = parseRestart(raw); err != nil {
			return s, false, err
		}
	}
	return s, false, nil
}

// strictObject decodes an object whose keys must be among allowed; an unknown one is an
// error that names it.
func strictObject(raw json.RawMessage, what string, allowed []string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, fmt.Errorf("%s must be an object", what)
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(allowed, k) {
			return nil, fmt.Errorf("%s has an unknown key %q; the keys it may have are %s", what, k, strings.Join(allowed, ", "))
		}
	}
	return m, nil
}

func parseFilter(raw json.RawMessage, what string) (Filter, error) {
	var f Filter
	if raw == nil {
		return f, nil
	}
	m, err := strictObject(raw, what, filterKeys)
	if err != nil {
		return f, err
	}
	for key, dst := range map[string]*[]string{"allow": &f.Allow, "deny": &f.Deny} {
		if v, ok := m[key]; ok {
			if err := json.Unmarshal(v, dst); err != nil {
				return f, fmt.Errorf("%s.%s must be an array of glob strings", what, key)
			}
			for _, g := range *dst {
				if _, err := path.Match(g, ""); err != nil {
					return f, fmt.Errorf("%s.%s: %q is not a valid glob (path.Match syntax: *, ?, [a-z])", what, key, g)
				}
			}
		}
	}
	return f, nil
}

// parseRestart reads "restart": the flags of relay supervise, as strings.
func parseRestart(raw json.RawMessage) (Restart, error) {
	var r Restart
	m, err := strictObject(raw, `"relay"."restart"`, restartKeys)
	if err != nil {
		return r, err
	}
	str := func(key string) (string, bool, error) {
		v, ok := m[key]
		if !ok {
			return "", false, nil
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", false, fmt.Errorf(`"relay"."restart".%s must be a string`, key)
		}
		return s, true, nil
	}
	if v, ok, err := str("policy"); err != nil {
		return r, err
	} else if ok {
		switch p := supervise.Policy(v); p {
		case supervise.Always, supervise.OnFailure, supervise.Never:
			r.Spec.Restart = p
		default:
			return r, fmt.Errorf(`"relay"."restart".policy %q: want always, on-failure or never`, v)
		}
	}
	if v, ok, err := str("limit"); err != nil {
		return r, err
	} else if ok {
		if v == "0" {
			r.Spec.Unlimited = true
		} else {
			n, d, cut := strings.Cut(v, "/")
			count, err1 := strconv.Atoi(n)
			window, err2 := time.ParseDuration(d)
			if !cut || err1 != nil || err2 != nil || count < 1 || window <= 0 {
				return r, fmt.Errorf(`"relay"."restart".limit %q: want N/DURATION (e.g. 5/1m) or "0"`, v)
			}
			r.Spec.Intensity, r.Spec.Window = count, window
		}
	}
	if v, ok, err := str("backoff"); err != nil {
		return r, err
	} else if ok {
		lo, hi, cut := strings.Cut(v, "..")
		minB, err1 := time.ParseDuration(lo)
		maxB, err2 := time.ParseDuration(hi)
		if !cut || err1 != nil || err2 != nil || minB <= 0 || maxB < minB {
			return r, fmt.Errorf(`"relay"."restart".backoff %q: want MIN..MAX (e.g. 100ms..30s)`, v)
		}
		r.Spec.MinBackoff, r.Spec.MaxBackoff = minB, maxB
	}
	if v, ok, err := str("replay"); err != nil {
		return r, err
	} else if ok {
		switch rp := supervise.Replay(v); rp {
		case supervise.ReplaySafe, supervise.ReplayAnnotated, supervise.ReplayNone:
			r.Proxy.Replay = rp
		default:
			return r, fmt.Errorf(`"relay"."restart".replay %q: want safe, annotated or none`, v)
		}
	}
	if v, ok, err := str("watch"); err != nil {
		return r, err
	} else if ok {
		if v == "" {
			return r, errors.New(`"relay"."restart".watch is empty; name the server's binary or script`)
		}
		r.Watch = v
	}
	for key, dst := range map[string]*time.Duration{"timeout": &r.Proxy.Timeout, "probe": &r.Proxy.ProbeAfter,
		"stopWait": &r.Spec.Child.StopWait, "drain": &r.Proxy.Drain} {
		v, ok, err := str(key)
		if err != nil {
			return r, err
		}
		if !ok {
			continue
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return r, fmt.Errorf(`"relay"."restart".%s %q: want a duration (e.g. 2s)`, key, v)
		}
		*dst = d
	}
	return r, nil
}
