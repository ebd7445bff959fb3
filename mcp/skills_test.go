package mcp_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/relayrt/relay/mcp"
)

const refundsMD = "---\nname: refunds\ndescription: Refund per policy.\n---\n# Refunds\n"

func skillServer(t *testing.T, opts *mcp.ServerOptions, skills ...*mcp.Skill) *mcp.Server {
	t.Helper()
	s := mcp.NewServer(mcp.Implementation{Name: "s", Version: "1"}, opts)
	for _, sk := range skills {
		if err := s.AddSkill(sk); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func TestSkills_AddSkillRefusesWhatSEP2640Forbids(t *testing.T) {
	many := map[string][]byte{"SKILL.md": []byte(refundsMD)}
	for i := 0; i < mcp.MaxSkillFiles; i++ {
		many[fmt.Sprintf("f/%d.md", i)] = nil
	}
	for _, tc := range []struct {
		rule, path string
		files      map[string][]byte
		want       string
	}{
		{"Skill Format: every skill has a SKILL.md", "refunds", map[string][]byte{"README.md": nil}, "needs a SKILL.md"},
		{"Skill Format: SKILL.md begins with frontmatter", "refunds", map[string][]byte{"SKILL.md": []byte("# Refunds\n")}, "must begin with YAML frontmatter"},
		{"frontmatter is closed", "refunds", map[string][]byte{"SKILL.md": []byte("---\nname: refunds\n")}, "no closing"},
		{"frontmatter has name and description", "refunds", map[string][]byte{"SKILL.md": []byte("---\nname: refunds\n---\n")}, "needs a name and a description"},
		{"frontmatter is YAML", "refunds", map[string][]byte{"SKILL.md": []byte("---\nname: [refunds\n---\n")}, "not valid YAML"},
		{"Resource Mapping: the last segment equals the name", "acme/refund", map[string][]byte{"SKILL.md": []byte(refundsMD)}, "must be the same"},
		{"Resource Mapping: the name follows the naming rules", "Refunds", map[string][]byte{"SKILL.md": []byte(refundsMD)}, "lowercase"},
		{"no empty path segment", "acme//refunds", map[string][]byte{"SKILL.md": []byte(refundsMD)}, "each segment"},
		{"Frontmatter: metadata io.modelcontextprotocol/ keys are reserved", "refunds",
			map[string][]byte{"SKILL.md": []byte("---\nname: refunds\ndescription: d\nmetadata:\n  io.modelcontextprotocol/x: 1\n---\n")}, "reserved"},
		{"file paths stay inside the skill", "refunds", map[string][]byte{"SKILL.md": []byte(refundsMD), "../x": nil}, "no . or .."},
		{"Limits: at most 512 files", "refunds", many, "more than the 512"},
		{"Limits: at most 16 MiB", "refunds", map[string][]byte{"SKILL.md": []byte(refundsMD), "big": make([]byte, mcp.MaxSkillBytes)}, "bytes of files"},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			s := mcp.NewServer(mcp.Implementation{Name: "s", Version: "1"}, nil)
			err := s.AddSkill(&mcp.Skill{Path: tc.path, Files: tc.files})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error saying %q, got %v", tc.want, err)
			}
			if r := result(t, connect(t, s).call(1, "server/discover", `{`+modernMeta+`}`)); r["capabilities"].(map[string]any)["extensions"] != nil {
				t.Fatalf("a refused skill declares nothing: %v", r["capabilities"])
			}
		})
	}
}

func TestSkills_MethodsExistOnlyWhileSkillsAreServed(t *testing.T) {
	// SEP-2640: declaring the extension commits the server to skills/list and skills/get; a
	// server that does not declare it answers them as unknown methods (-32601).
	s := skillServer(t, nil)
	c := connect(t, s)
	for _, m := range []string{"skills/list", "skills/get", "resources/directory/read"} {
		if got := code(c.call(1, m, `{"uri":"skill://refunds/SKILL.md",`+modernMeta+`}`)); got != -32601 {
			t.Errorf("%s without skills: %d, want -32601", m, got)
		}
	}
	if err := s.AddSkill(&mcp.Skill{Path: "refunds", Files: map[string][]byte{"SKILL.md": []byte(refundsMD)}}); err != nil {
		t.Fatal(err)
	}
	if r := result(t, c.call(2, "skills/list", `{`+modernMeta+`}`)); len(r["skills"].([]any)) != 1 {
		t.Fatalf("skills/list: %v", r)
	}
	s.RemoveSkills("refunds")
	if got := code(c.call(3, "skills/list", `{`+modernMeta+`}`)); got != -32601 {
		t.Errorf("after RemoveSkills: %d", got)
	}
	if got := code(c.call(4, "resources/list", `{`+modernMeta+`}`)); got != -32601 {
		t.Errorf("the removed skill's SKILL.md was the only resource: the capability goes with it, got %d", got)
	}
}

func TestSkills_PagesKeepEntriesWhole(t *testing.T) {
	// SEP-2640 Listing Skills: pagination as the base protocol's lists, an entry never split.
	var skills []*mcp.Skill
	for _, n := range []string{"alpha", "beta", "gamma"} {
		skills = append(skills, &mcp.Skill{Path: "team/" + n, Files: map[string][]byte{
			"SKILL.md": []byte("---\nname: " + n + "\ndescription: d\n---\n"), "a.md": []byte("a"), "b/c.md": []byte("c")}})
	}
	c := connect(t, skillServer(t, &mcp.ServerOptions{PageSize: 2}, skills...))
	var got []string
	cursor := ""
	for i := 0; i < 3; i++ {
		r := result(t, c.call(i, "skills/list", fmt.Sprintf(`{"cursor":%q,%s}`, cursor, modernMeta)))
		for _, e := range r["skills"].([]any) {
			e := e.(map[string]any)
			if len(e["resources"].([]any)) != 3 {
				t.Errorf("entry %v is not whole", e["uri"])
			}
			got = append(got, e["uri"].(string))
		}
		next, _ := r["nextCursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	if strings.Join(got, " ") != "skill://team/alpha/SKILL.md skill://team/beta/SKILL.md skill://team/gamma/SKILL.md" {
		t.Fatalf("pages: %v", got)
	}
}

func TestSkills_FilesReadBackAsListed(t *testing.T) {
	// Each file is a resource under skill://<skill-path>/<file-path> (escaped as a URI path),
	// text when it is UTF-8 and a blob otherwise, and a directory read lists direct children.
	fsys := fstest.MapFS{
		"SKILL.md":             {Data: []byte("\ufeff---\r\nname: refunds\r\ndescription: Refund per policy.\r\n---\r\nBody\r\n")},
		"logo.png":             {Data: []byte{0x89, 'P', 'N', 'G', 0xff}},
		"my notes/draft 1.md":  {Data: []byte("notes")},
		"my notes/deep/x.json": {Data: []byte("{}")},
	}
	s := mcp.NewServer(mcp.Implementation{Name: "s", Version: "1"}, nil)
	if err := s.AddSkillFS("refunds", fsys); err != nil {
		t.Fatal(err)
	}
	c := connect(t, s)
	entry := result(t, c.call(1, "skills/get", `{"uri":"skill://refunds/SKILL.md",`+modernMeta+`}`))["skill"].(map[string]any)
	var uris []string
	for _, r := range entry["resources"].([]any) {
		uris = append(uris, r.(map[string]any)["uri"].(string))
	}
	if strings.Join(uris, " ") != "skill://refunds/SKILL.md skill://refunds/logo.png skill://refunds/my%20notes/deep/x.json skill://refunds/my%20notes/draft%201.md" {
		t.Fatalf("manifest: %v", uris)
	}
	if fm := entry["frontmatter"].(map[string]any); fm["name"] != "refunds" || fm["description"] != "Refund per policy." {
		t.Fatalf("a BOM and CRLF lines are frontmatter too: %v", fm)
	}
	png := result(t, c.call(2, "resources/read", `{"uri":"skill://refunds/logo.png",`+modernMeta+`}`))["contents"].([]any)[0].(map[string]any)
	if png["blob"] != "iVBOR/8=" || png["text"] != nil || png["mimeType"] != "image/png" {
		t.Fatalf("binary file: %v", png)
	}
	dir := result(t, c.call(3, "resources/directory/read", `{"uri":"skill://refunds/my%20notes",`+modernMeta+`}`))
	raw, _ := json.Marshal(dir["resources"])
	if string(raw) != `[{"mimeType":"inode/directory","name":"deep","uri":"skill://refunds/my%20notes/deep"},{"mimeType":"text/markdown","name":"draft 1.md","size":5,"uri":"skill://refunds/my%20notes/draft%201.md"}]` {
		t.Fatalf("directory: %s", raw)
	}
	if got := code(c.call(4, "resources/read", `{"uri":"skill://refunds/nope.md",`+modernMeta+`}`)); got != -32602 {
		t.Fatalf("a file the skill does not have: %d, want -32602", got)
	}
}

func TestSkills_NestedSkillsShareFilesButNeverDisagree(t *testing.T) {
	// SEP-2640 Nested Skills: the enclosing skill's manifest lists the nested skill's files.
	inner := []byte("---\nname: inner\ndescription: d\n---\n")
	s := skillServer(t, nil,
		&mcp.Skill{Path: "outer", Files: map[string][]byte{"SKILL.md": []byte("---\nname: outer\ndescription: d\n---\n"), "inner/SKILL.md": inner}},
		&mcp.Skill{Path: "outer/inner", Files: map[string][]byte{"SKILL.md": inner}})
	err := s.AddSkill(&mcp.Skill{Path: "outer/inner", Files: map[string][]byte{"SKILL.md": []byte("---\nname: inner\ndescription: other\n---\n")}})
	if err == nil || !strings.Contains(err.Error(), "differs") {
		t.Fatalf("two skills that serve one URI with different bytes: %v", err)
	}
	r := result(t, connect(t, s).call(1, "skills/get", `{"uri":"skill://outer/inner/SKILL.md",`+modernMeta+`}`))
	if r["skill"].(map[string]any)["frontmatter"].(map[string]any)["description"] != "d" {
		t.Fatalf("a refused skill must leave the one it would replace: %v", r)
	}
}

func TestSkills_FrontmatterIsVerbatim(t *testing.T) {
	// SEP-2640 Frontmatter: every field the author wrote, rendered as JSON; a date stays the
	// text it was written as, as the YAML 1.2 core schema reads it.
	md := "---\nname: refunds\ndescription: >-\n  Refund\n  per policy.\ncreated: 2024-01-01\nversion: 1.5\n" +
		"count: 3\nbeta: false\nnothing: ~\ntags: [a, 'b']\nbase: &b {k: v}\nmetadata: *b\n---\n"
	s := skillServer(t, nil, &mcp.Skill{Path: "refunds", Files: map[string][]byte{"SKILL.md": []byte(md)}})
	r := result(t, connect(t, s).call(1, "skills/get", `{"uri":"skill://refunds/SKILL.md",`+modernMeta+`}`))
	raw, _ := json.Marshal(r["skill"].(map[string]any)["frontmatter"])
	want := `{"base":{"k":"v"},"beta":false,"count":3,"created":"2024-01-01","description":"Refund per policy.",` +
		`"metadata":{"k":"v"},"name":"refunds","nothing":null,"tags":["a","b"],"version":1.5}`
	if string(raw) != want {
		t.Fatalf("frontmatter\n%s\nwant\n%s", raw, want)
	}
}

// hugeFS reports huge.bin as larger than a skill may be, and fails if it is opened.
type hugeFS struct{ fstest.MapFS }

type hugeInfo struct{ fs.FileInfo }

func (hugeInfo) Size() int64 { return mcp.MaxSkillBytes + 1 }

func (h hugeFS) Stat(name string) (fs.FileInfo, error) {
	info, err := h.MapFS.Stat(name)
	if name == "huge.bin" && err == nil {
		info = hugeInfo{info}
	}
	return info, err
}

func (h hugeFS) Open(name string) (fs.File, error) {
	if name == "huge.bin" {
		return nil, errors.New("opened a file that its size should have refused")
	}
	return h.MapFS.Open(name)
}

func TestSkills_AddSkillFSStopsAtTheLimitsBeforeReading(t *testing.T) {
	// SEP-2640 Limits: 16 MiB per skill. A file that would pass them is refused by its size,
	// without being read: memory stays bounded whatever the directory holds.
	fsys := hugeFS{fstest.MapFS{"SKILL.md": {Data: []byte(refundsMD)}, "huge.bin": {Data: []byte("x")}}}
	s := mcp.NewServer(mcp.Implementation{Name: "s", Version: "1"}, nil)
	if err := s.AddSkillFS("refunds", fsys); err == nil || !strings.Contains(err.Error(), "bytes of files") {
		t.Fatalf("want the size limit, got %v", err)
	}
}

func TestSkills_DynamicSkillIsReadLive(t *testing.T) {
	// SEP-2640 Resources: a skill whose content is generated publishes "resources": "dynamic"
	// instead of a manifest; its files and directories are read when asked for, so a change
	// shows at once, and a file it does not have is -32602 as for any resource.
	live := fstest.MapFS{"report.md": {Data: []byte("v1")}, "data/today.csv": {Data: []byte("a,b\n")}}
	s := skillServer(t, nil, &mcp.Skill{Path: "reports/daily", Live: live,
		Files: map[string][]byte{"SKILL.md": []byte("---\nname: daily\ndescription: Today's report.\n---\nRead report.md.\n")}})
	c := connect(t, s)
	read := func(id int, uri string) string {
		r := result(t, c.call(id, "resources/read", `{"uri":"`+uri+`",`+modernMeta+`}`))
		return r["contents"].([]any)[0].(map[string]any)["text"].(string)
	}
	entry := result(t, c.call(1, "skills/get", `{"uri":"skill://reports/daily/SKILL.md",`+modernMeta+`}`))["skill"].(map[string]any)
	if entry["resources"] != "dynamic" || entry["frontmatter"].(map[string]any)["name"] != "daily" {
		t.Fatalf("entry: %v", entry)
	}
	if got := read(2, "skill://reports/daily/report.md"); got != "v1" {
		t.Fatalf("read: %q", got)
	}
	live["report.md"] = &fstest.MapFile{Data: []byte("v2")}
	live["extra.txt"] = &fstest.MapFile{Data: []byte("new")}
	if got := read(3, "skill://reports/daily/report.md"); got != "v2" {
		t.Fatalf("a dynamic skill is read when asked for: %q", got)
	}
	if got := read(4, "skill://reports/daily/SKILL.md"); !strings.HasPrefix(got, "---\nname: daily") {
		t.Fatalf("SKILL.md is the registered one: %q", got)
	}
	dir := result(t, c.call(5, "resources/directory/read", `{"uri":"skill://reports/daily",`+modernMeta+`}`))
	var children []string
	for _, ch := range dir["resources"].([]any) {
		ch := ch.(map[string]any)
		children = append(children, fmt.Sprint(ch["uri"], " ", ch["mimeType"]))
	}
	if want := "skill://reports/daily/SKILL.md text/markdown skill://reports/daily/data inode/directory " +
		"skill://reports/daily/extra.txt text/plain skill://reports/daily/report.md text/markdown"; strings.Join(children, " ") != want {
		t.Fatalf("directory:\n%v\nwant\n%v", strings.Join(children, " "), want)
	}
	for i, uri := range []string{"skill://reports/daily/nope.md", "skill://reports/daily/data", "skill://reports/daily/%2e%2e/x"} {
		if got := code(c.call(6+i, "resources/read", `{"uri":"`+uri+`",`+modernMeta+`}`)); got != -32602 {
			t.Errorf("%s: %d, want -32602", uri, got)
		}
	}
	if got := code(c.call(9, "resources/directory/read", `{"uri":"skill://reports/daily/report.md",`+modernMeta+`}`)); got != -32602 {
		t.Errorf("a directory read of a live file: %d, want -32602", got)
	}
	if err := s.AddSkill(&mcp.Skill{Path: "reports/daily", Live: live, Files: map[string][]byte{
		"SKILL.md": []byte("---\nname: daily\ndescription: d\n---\n"), "x.md": nil}}); err == nil {
		t.Error("a dynamic skill's Files hold SKILL.md alone")
	}
}
