package gateway

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/relayrt/relay/supervise"
)

// A Claude Desktop file: host keys the gateway has no use for are ignored, "disabled" is
// honoured, and the servers keep the file's order.
func TestConfig_HostFileIsReadAsItIs(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{
	  "globalShortcut": "Ctrl+Space",
	  "mcpServers": {
	    "zeta": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
	             "env": {"A": "1"}, "cwd": "/srv", "type": "stdio", "autoApprove": ["read_file"], "timeout": 60},
	    "alpha.remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer x"}, "type": "http"},
	    "off": {"command": "never-run", "disabled": true}
	  }}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Servers) != 2 {
		t.Fatalf("servers: %+v", cfg.Servers)
	}
	z, a := cfg.Servers[0], cfg.Servers[1]
	if z.Name != "zeta" || z.Command != "npx" || len(z.Args) != 3 || z.Env["A"] != "1" || z.Dir != "/srv" || z.Prefix != "zeta" {
		t.Errorf("zeta: %+v", z)
	}
	if a.Name != "alpha.remote" || a.URL != "https://mcp.example.com/mcp" || a.Headers["Authorization"] != "Bearer x" {
		t.Errorf("alpha: %+v", a)
	}
	if a.OAuth != nil {
		t.Errorf("OAuth without \"relay\".\"oauth\": %+v", a.OAuth)
	}
	if a.Prefix != "alpha_remote" { // made a valid name
		t.Errorf("prefix %q, want alpha_remote", a.Prefix)
	}
}

// VS Code's "servers" key is read too, after "mcpServers".
func TestConfig_VSCodeServers(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{"inputs": [], "servers": {"b": {"type": "stdio", "command": "b"}}, "mcpServers": {"a": {"command": "a"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Servers) != 2 || cfg.Servers[0].Name != "a" || cfg.Servers[1].Name != "b" {
		t.Fatalf("servers: %+v", cfg.Servers)
	}
}

func TestConfig_RelayOptions(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{"mcpServers": {"s": {"command": "s", "relay": {
	  "prefix": "", "tools": {"allow": ["get_*", "list_*"], "deny": ["*_secret"]}, "prompts": {"deny": ["*"]},
	  "restart": {"policy": "on-failure", "limit": "3/10s", "backoff": "50ms..2s", "replay": "safe",
	              "timeout": "30s", "probe": "5s", "stopWait": "1s", "drain": "3s", "watch": "/srv/server"}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Servers[0]
	if s.Prefix != "" {
		t.Errorf("prefix %q, want \"\" (as configured)", s.Prefix)
	}
	for name, want := range map[string]bool{"get_x": true, "list_y": true, "get_secret": false, "put_z": false} {
		if s.Tools.Keeps(name) != want {
			t.Errorf("tools keep %q = %v, want %v", name, !want, want)
		}
	}
	if s.Prompts.Keeps("anything") {
		t.Error("prompts deny * keeps a prompt")
	}
	r := s.Restart
	if r.Spec.Restart != supervise.OnFailure || r.Spec.Intensity != 3 || r.Spec.Window != 10*time.Second ||
		r.Spec.MinBackoff != 50*time.Millisecond || r.Spec.MaxBackoff != 2*time.Second || r.Spec.Child.StopWait != time.Second {
		t.Errorf("spec: %+v", r.Spec)
	}
	if r.Watch != "/srv/server" {
		t.Errorf("watch %q", r.Watch)
	}
	if r.Proxy.Replay != supervise.ReplaySafe || r.Proxy.Timeout != 30*time.Second || r.Proxy.ProbeAfter != 5*time.Second || r.Proxy.Drain != 3*time.Second {
		t.Errorf("proxy: %+v", r.Proxy)
	}
}

// An unknown key inside "relay" (or inside its objects) is an error that names it; the
// same key outside "relay" is the host's business and ignored.
func TestConfig_UnknownRelayKeyIsAnErrorNamingIt(t *testing.T) {
	for _, c := range []struct{ relay, key string }{
		{`{"prefx": "x"}`, `"prefx"`},
		{`{"tools": {"alow": ["x"]}}`, `"alow"`},
		{`{"restart": {"retries": "3"}}`, `"retries"`},
	} {
		_, err := ParseConfig([]byte(`{"mcpServers": {"s": {"command": "s", "prefx": 1, "relay": ` + c.relay + `}}}`))
		if err == nil || !strings.Contains(err.Error(), c.key) || !strings.Contains(err.Error(), `"s"`) {
			t.Errorf("relay %s: err %v, want one naming %s and the server", c.relay, err, c.key)
		}
	}
}

func TestConfig_Errors(t *testing.T) {
	for _, c := range []struct{ file, says string }{
		{`[]`, "not a JSON object"},
		{`{}`, "names no server"},
		{`{"mcpServers": {"a": {"command": "a", "disabled": true}}}`, "names no server"},
		{`{"mcpServers": {"a": {}}}`, "neither"},
		{`{"mcpServers": {"a": {"command": "a", "url": "http://x"}}}`, "both"},
		{`{"mcpServers": {"a": {"url": "ftp://x"}}}`, "not an http"},
		{`{"mcpServers": {"a": {"command": "a"}}, "servers": {"a": {"command": "b"}}}`, "twice"},
		{`{"mcpServers": {"a": {"command": "a", "relay": {"prefix": "p"}}, "b": {"command": "b", "relay": {"prefix": "p"}}}}`, "same prefix"},
		{`{"mcpServers": {"a": {"command": "a", "relay": {"prefix": "a b"}}}}`, "only letters"},
		{`{"mcpServers": {"a": {"command": "a", "relay": {"tools": {"deny": ["[a"]}}}}}`, "not a valid glob"},
		{`{"mcpServers": {"a": {"command": "a", "relay": {"restart": {"policy": "sometimes"}}}}}`, "want always"},
		{`{"mcpServers": {"a": {"command": "a", "relay": {"restart": {"limit": "5"}}}}}`, "N/DURATION"},
		{`{"mcpServers": {"a": {"command": "a", "relay": {"restart": {"backoff": "2s..1s"}}}}}`, "MIN..MAX"},
		{`{"mcpServers": {"a": {"url": "http://x", "relay": {"restart": {}}}}}`, "remote"},
		{`{"mcpServers": {"a": {"command": "a", "relay": {"oauth": {"clientId": "c"}}}}}`, "local command"},
		{`{"mcpServers": {"a": {"url": "http://x", "relay": {"oauth": {"clientSecret": "s"}}}}}`, "clientId"},
		{`{"mcpServers": {"a": {"url": "http://x", "relay": {"oauth": {"clientId": "c", "scope": "x"}}}}}`, `"scope"`},
	} {
		_, err := ParseConfig([]byte(c.file))
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: err %v, want one saying %q", c.file, err, c.says)
		}
	}
}

// FuzzParseConfig: whatever the file, ParseConfig returns a configuration or an error,
// never panics, and what it accepts is a JSON object whose servers each have a command or
// a URL and a valid prefix.
func FuzzParseConfig(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseConfig(data)
		if err != nil {
			return
		}
		var top map[string]json.RawMessage
		if json.Unmarshal(data, &top) != nil {
			t.Fatalf("accepted a file that is not a JSON object: %q", data)
		}
		for _, s := range cfg.Servers {
			if (s.Command == "") == (s.URL == "") {
				t.Fatalf("server %q has both or neither of command and url", s.Name)
			}
			if ValidName(s.Prefix) != s.Prefix {
				t.Fatalf("server %q has an invalid prefix %q", s.Name, s.Prefix)
			}
		}
	})
}

func TestConfig_OAuthForARemoteServer(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{"mcpServers": {"r": {"url": "https://r.example.com/mcp",
	  "relay": {"oauth": {"clientId": "gw", "clientSecret": "${SECRET}", "issuer": "https://auth.example.com"}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if o := cfg.Servers[0].OAuth; o == nil || o.ClientID != "gw" || o.ClientSecret != "${SECRET}" || o.Issuer != "https://auth.example.com" {
		t.Errorf("oauth: %+v", o)
	}
}
