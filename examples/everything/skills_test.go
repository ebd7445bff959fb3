package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/relayrt/relay/internal/conformance"
	"github.com/relayrt/relay/mcp"
)

// declaredCapabilities returns what the server declares to a client of era e: in
// server/discover under 2026-07-28, in initialize's result before it.
func declaredCapabilities(t *testing.T, e era) map[string]any {
	t.Helper()
	if e.modern {
		caps, _ := open(t, e, nil).mustResult("server/discover", nil)["capabilities"].(map[string]any)
		return caps
	}
	conn := newServer().Runtime().Connect(context.Background())
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn.Send(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	frame, err := conn.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Result struct{ Capabilities map[string]any }
	}
	json.Unmarshal(frame, &r)
	return r.Result.Capabilities
}

// TestSEP2640_SkillsDeclaredListedAndVerifiable checks the fixture's skills as a host would:
// the extension is declared with directoryRead beside resources; skills/list gives each skill
// whole, with the frontmatter of its SKILL.md and a manifest of every file of its directory,
// each of whose digest and size match what resources/read returns; skills/get gives the same
// entry, and -32602 for a URI that is no skill; resources/directory/read lists a directory's
// children. So the official suite's sep-2640-skills-* checks run rather than skip.
func TestSEP2640_SkillsDeclaredListedAndVerifiable(t *testing.T) {
	forEra(t, func(t *testing.T, e era) {
		caps := declaredCapabilities(t, e)
		ext, _ := caps["extensions"].(map[string]any)
		if !reflect.DeepEqual(ext[mcp.SkillsExtension], map[string]any{"directoryRead": true}) || caps["resources"] == nil {
			t.Fatalf("SEP-2640 Capability Negotiation: want %s with directoryRead, and resources: %v", mcp.SkillsExtension, caps)
		}

		c := open(t, e, nil)
		list := c.mustResult("skills/list", nil)
		entries, _ := list["skills"].([]any)
		var uris []string
		for _, it := range entries {
			uris = append(uris, it.(map[string]any)["uri"].(string))
		}
		if want := []string{mcp.SkillURI("acme/billing/refunds"), mcp.SkillURI("pdf-processing")}; !slices.Equal(uris, want) {
			t.Fatalf("skills/list: %v, want %v", uris, want)
		}
		if e.modern && (list["ttlMs"] == nil || list["cacheScope"] == nil) {
			t.Errorf("ListSkillsResult is a CacheableResult: %v", list)
		}
		for _, it := range entries {
			entry := it.(map[string]any)
			uri := entry["uri"].(string)
			path := uri[len("skill://") : len(uri)-len("/SKILL.md")]
			wantFiles := map[string]bool{}
			fs.WalkDir(skillFiles, fixtureSkills[path], func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					wantFiles["skill://"+path+p[len(fixtureSkills[path]):]] = true
				}
				return nil
			})
			manifest, _ := entry["resources"].([]any)
			if len(manifest) != len(wantFiles) || manifest[0].(map[string]any)["uri"] != uri {
				t.Errorf("%s: the manifest must list every file once, SKILL.md first: %v, want %v", uri, manifest, wantFiles)
			}
			for _, m := range manifest {
				m := m.(map[string]any)
				if !wantFiles[m["uri"].(string)] {
					t.Errorf("%s: %v is not a file of the skill", uri, m["uri"])
				}
				contents := c.mustResult("resources/read", map[string]any{"uri": m["uri"]})["contents"].([]any)[0].(map[string]any)
				data := []byte(contents["text"].(string))
				if b, ok := contents["blob"].(string); ok {
					data, _ = base64.StdEncoding.DecodeString(b)
				}
				sum := sha256.Sum256(data)
				if m["digest"] != "sha256:"+hex.EncodeToString(sum[:]) || m["size"] != float64(len(data)) {
					t.Errorf("Integrity and Verification: %v does not match what resources/read returns (%d bytes)", m, len(data))
				}
			}
			got := c.mustResult("skills/get", map[string]any{"uri": uri})
			if !reflect.DeepEqual(got["skill"], entry) || got["nextCursor"] != nil {
				t.Errorf("skills/get %s: %v, want the listed entry %v", uri, got["skill"], entry)
			}
			if e.modern && (got["ttlMs"] == nil || got["cacheScope"] == nil) {
				t.Errorf("GetSkillResult is a CacheableResult: %v", got)
			}
		}
		refunds := entries[0].(map[string]any)["frontmatter"].(map[string]any)
		if refunds["name"] != "refunds" || refunds["license"] != "Apache-2.0" ||
			!reflect.DeepEqual(refunds["metadata"], map[string]any{"owner": "billing", "version": "1.2"}) {
			t.Errorf("Frontmatter: every field of SKILL.md's frontmatter, verbatim: %v", refunds)
		}
		if r := c.call("skills/get", map[string]any{"uri": "skill://no-such-skill/SKILL.md"}); r.Error == nil || r.Error.Code != -32602 {
			t.Errorf("skills/get of an unknown skill: want -32602, got %s %v", r.Result, r.Error)
		}

		root := c.mustResult("resources/directory/read", map[string]any{"uri": "skill://acme/billing/refunds"})
		var children []string
		for _, ch := range root["resources"].([]any) {
			ch := ch.(map[string]any)
			children = append(children, ch["uri"].(string)+" "+ch["mimeType"].(string))
		}
		if want := []string{"skill://acme/billing/refunds/SKILL.md text/markdown", "skill://acme/billing/refunds/examples inode/directory"}; !slices.Equal(children, want) {
			t.Errorf("Reading Directories: %v, want %v", children, want)
		}
		if r := c.call("resources/directory/read", map[string]any{"uri": mcp.SkillURI("pdf-processing")}); r.Error == nil || r.Error.Code != -32602 {
			t.Errorf("a directory read of a file: want -32602, got %s %v", r.Result, r.Error)
		}
	})
}

// TestConformance_SkillsScenariosRunEveryCheck runs the official suite's Skills scenarios
// (0.2 line) against this server on Streamable HTTP: every check must succeed, and none may
// be skipped, as all were while the server did not declare the extension.
func TestConformance_SkillsScenariosRunEveryCheck(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	suite := conformance.Prepare(ctx, t)
	addr := startHTTP(ctx, t)
	for _, sc := range []string{"sep-2640-skills-directory", "sep-2640-skills-enumeration", "sep-2640-skills-manifest"} {
		checks := suite.RunScenario(ctx, t, "http://"+addr+"/mcp", sc)
		for _, c := range checks {
			if c.Status != "SUCCESS" {
				t.Errorf("%s: %s is %s: %s", sc, c.ID, c.Status, c.ErrorMessage)
			}
		}
		t.Logf("%s: %d checks, all SUCCESS", sc, len(checks))
	}
}
