package mcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/relayrt/relay/jsonrpc"
)

// The Skills extension (io.modelcontextprotocol/skills, SEP-2640, written against 2026-07-28):
// a server publishes Agent Skills, directories of files whose SKILL.md tells an agent how to do
// something, beside its tools, resources and prompts. Every file of a skill is a resource,
// skill://<skill-path>/<file-path>, read with resources/read; skills/list and skills/get give
// each skill's entry, its SKILL.md frontmatter and a manifest of every file with its SHA-256
// digest and size, which the host checks what it reads against; resources/directory/read
// lists a directory of a skill. Relay serves the three methods in both generations, with
// ttlMs and cacheScope on skills/list and skills/get under 2026-07-28.

// SkillsExtension is the Skills extension's identifier, under capabilities.extensions.
const SkillsExtension = "io.modelcontextprotocol/skills"

// The limits every host must accept (SEP-2640 Skill Entries › Limits). A server should not
// serve a skill past them, and AddSkill refuses one.
const (
	MaxSkillFiles = 512
	MaxSkillBytes = 16 << 20
)

// DirectoryMimeType is the MIME type of a directory resource.
const DirectoryMimeType = "inode/directory"

// Skill is a skill to serve: its place in the server's skill namespace and its files.
type Skill struct {
	// Path locates the skill: one segment ("git-workflow") or more ("acme/billing/refunds"),
	// of letters, digits and -._~ only. The last segment is the skill's name and must equal
	// the name in SKILL.md's frontmatter; the others are the server's to choose.
	Path string
	// Files holds every file of the skill by its path in the skill's directory, with "/"
	// between segments: SKILL.md, which must begin with YAML frontmatter holding at least
	// name and description (agentskills.io/specification), and any supporting files
	// ("references/FORMS.md", "scripts/extract.py").
	Files map[string][]byte
	// Live, when not nil, makes the skill dynamic (SEP-2640 Resources: "dynamic"), for
	// content that is generated or changes while it is served: its entry publishes no
	// manifest ("resources": "dynamic", which some hosts decline to load), and every file
	// but SKILL.md, and every directory, is read from Live when a client asks for it (at
	// most MaxSkillBytes a file). SKILL.md is still Files' alone: its frontmatter is the
	// entry's, which must not change under a host. Live must be safe for concurrent use. A
	// client names the files read from it: for a directory on disk, give the FS of an
	// os.Root (os.OpenRoot(dir), then its FS method), which refuses a symlink that leads out
	// of the directory, rather than os.DirFS, which follows it wherever it points.
	Live fs.FS
}

// SkillURI returns the URI of the SKILL.md of the skill at path, which names the skill in
// skills/get and reads it with resources/read.
func SkillURI(path string) string { return "skill://" + path + "/SKILL.md" }

// AddSkill serves a skill, replacing one at the same path, and declares the Skills extension
// (with directoryRead) and the resources capability. Its SKILL.md is listed by
// resources/list; every file is readable with resources/read, and every directory with
// resources/directory/read. It fails, and changes nothing, when the skill breaks a rule of
// SEP-2640 or of the Agent Skills format: the error says which.
func (s *Server) AddSkill(sk *Skill) error {
	built, err := newSkill(sk)
	if err != nil {
		return err
	}
	var conflict error
	s.update(resourcesChanged, func(r *registry) {
		next := cloneMap(r.skills.all())
		next[built.uri] = built
		set, err := indexSkills(next)
		if err != nil {
			conflict = err
			return
		}
		r.skills = set
		r.resources[built.uri] = built.listing
	})
	return conflict
}

// AddSkillFS serves the skill whose directory is fsys (fs.Sub picks one out of a larger
// tree) at path, as AddSkill does: every regular file under fsys's root is a file of the
// skill, and so is what a symlink there points to (os.Root's FS keeps them inside the
// directory). It stops at the limits, before reading a file that would pass them.
func (s *Server) AddSkillFS(path string, fsys fs.FS) error {
	sk := &Skill{Path: path, Files: map[string][]byte{}}
	total := 0
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !d.Type().IsRegular() && d.Type()&fs.ModeSymlink == 0 {
			return nil // devices, pipes, sockets: not files of a skill
		}
		if len(sk.Files) == MaxSkillFiles {
			return fmt.Errorf("more than %d files", MaxSkillFiles)
		}
		if info, err := fs.Stat(fsys, name); err != nil {
			return err
		} else if int64(total)+info.Size() > MaxSkillBytes { // before reading: a huge file is never loaded
			return fmt.Errorf("more than %d bytes of files", MaxSkillBytes)
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		if total += len(data); total > MaxSkillBytes { // it grew since
			return fmt.Errorf("more than %d bytes of files", MaxSkillBytes)
		}
		sk.Files[name] = data
		return nil
	})
	if err != nil {
		return fmt.Errorf("mcp: skill %q: %w", path, err)
	}
	return s.AddSkill(sk)
}

// RemoveSkills stops serving the skills at paths.
func (s *Server) RemoveSkills(paths ...string) {
	s.update(resourcesChanged, func(r *registry) {
		next := cloneMap(r.skills.all())
		for _, p := range paths {
			delete(next, SkillURI(p))
			delete(r.resources, SkillURI(p))
		}
		r.skills, _ = indexSkills(next) // removing files cannot make two of them disagree
	})
}

// skill is a skill as served: its entry, encoded once, and its files.
type skill struct {
	uri     string          // of its SKILL.md
	root    string          // its directory: uri without /SKILL.md
	entry   json.RawMessage // {"uri","frontmatter","resources"}, as skills/list and skills/get give it
	files   []*skillFile    // SKILL.md first
	listing *resource       // SKILL.md as resources/list shows it
	live    fs.FS           // a dynamic skill's files (Skill.Live)
}

func (sk *skill) definition() json.RawMessage { return sk.entry }

// skillFile is one file of a skill.
type skillFile struct {
	uri      string
	rel      []string // its path in the skill's directory, by segment
	mimeType string
	data     []byte
	digest   string
	def      json.RawMessage // as a directory read shows it
}

func (f *skillFile) read(_ context.Context, _ *ReadResourceRequest) (*ReadResourceResult, error) {
	c := &ResourceContents{URI: f.uri, MimeType: f.mimeType}
	if utf8.Valid(f.data) {
		c.Text = string(f.data) // the same bytes the digest covers
	} else {
		c.Blob = f.data
	}
	return &ReadResourceResult{Contents: []*ResourceContents{c}}, nil
}

// newSkill checks a skill and encodes what the server gives of it.
func newSkill(sk *Skill) (*skill, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("mcp: skill %q: "+format, append([]any{sk.Path}, args...)...)
	}
	segs := strings.Split(sk.Path, "/")
	for _, seg := range segs {
		if seg == "" || seg == "." || seg == ".." || strings.Trim(seg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~") != "" {
			return nil, fail("each segment of the path must be letters, digits and -._~ (and not . or ..)")
		}
	}
	name := segs[len(segs)-1]
	if !validSkillName(name) {
		return nil, fail("the last segment, the skill's name, must be 1-64 lowercase letters, digits and hyphens, with no hyphen first, last or twice in a row")
	}
	md, ok := sk.Files["SKILL.md"]
	if !ok {
		return nil, fail("every skill needs a SKILL.md at its root")
	}
	fm, err := parseFrontmatter(md)
	if err != nil {
		return nil, fail("SKILL.md: %v", err)
	}
	if fm.name != name {
		return nil, fail("SKILL.md's frontmatter names the skill %q, but the path ends in %q; they must be the same", fm.name, name)
	}
	if sk.Live != nil && len(sk.Files) != 1 {
		return nil, fail("a dynamic skill (Live) takes SKILL.md from Files and every other file from Live")
	}
	if len(sk.Files) > MaxSkillFiles {
		return nil, fail("%d files, more than the %d every host must accept", len(sk.Files), MaxSkillFiles)
	}
	out := &skill{uri: SkillURI(sk.Path), root: "skill://" + sk.Path, live: sk.Live}
	total := 0
	for rel, data := range sk.Files {
		if !fs.ValidPath(rel) || rel == "." {
			return nil, fail("file %q: paths are relative, with / between segments, and no . or .. segment", rel)
		}
		total += len(data)
		segs := strings.Split(rel, "/")
		escaped := make([]string, len(segs))
		for i, s := range segs {
			escaped[i] = url.PathEscape(s)
		}
		sum := sha256.Sum256(data)
		f := &skillFile{uri: out.root + "/" + strings.Join(escaped, "/"), rel: segs, mimeType: mimeTypeOf(rel, data),
			data: data, digest: "sha256:" + hex.EncodeToString(sum[:])}
		f.def, _ = json.Marshal(&Resource{URI: f.uri, Name: segs[len(segs)-1], MimeType: f.mimeType, Size: int64(len(data))})
		out.files = append(out.files, f)
	}
	if total > MaxSkillBytes {
		return nil, fail("%d bytes of files, more than the %d every host must accept", total, MaxSkillBytes)
	}
	slices.SortFunc(out.files, func(a, b *skillFile) int {
		if (a.uri == out.uri) != (b.uri == out.uri) {
			if a.uri == out.uri {
				return -1
			}
			return 1
		}
		return strings.Compare(a.uri, b.uri)
	})
	type manifestEntry struct {
		URI    string `json:"uri"`
		Digest string `json:"digest"`
		Size   int    `json:"size"`
	}
	manifest := make([]manifestEntry, len(out.files))
	for i, f := range out.files {
		manifest[i] = manifestEntry{f.uri, f.digest, len(f.data)}
	}
	var resources any = manifest
	if sk.Live != nil {
		resources = "dynamic"
	}
	out.entry, err = json.Marshal(struct {
		URI         string          `json:"uri"`
		Frontmatter json.RawMessage `json:"frontmatter"`
		Resources   any             `json:"resources"`
	}{out.uri, fm.raw, resources})
	if err != nil {
		return nil, fail("%v", err)
	}
	md0 := out.files[0]
	def := &Resource{URI: out.uri, Name: fm.name, Description: fm.description, MimeType: "text/markdown", Size: int64(len(md))}
	raw, _ := json.Marshal(def)
	md0.def = raw
	out.listing = &resource{raw: raw, read: md0.read}
	return out, nil
}

// validSkillName applies the Agent Skills naming rules: 1-64 characters, lowercase letters,
// digits and hyphens, no hyphen first, last, or twice in a row.
func validSkillName(n string) bool {
	if n == "" || len(n) > 64 || n[0] == '-' || n[len(n)-1] == '-' || strings.Contains(n, "--") {
		return false
	}
	return strings.Trim(n, "abcdefghijklmnopqrstuvwxyz0123456789-") == ""
}

type frontmatter struct {
	raw               json.RawMessage // every field, as JSON
	name, description string
}

// parseFrontmatter reads the YAML frontmatter that begins a SKILL.md: the lines between a
// first line "---" and the next line "---". The entry carries all of it, verbatim, as JSON.
func parseFrontmatter(md []byte) (*frontmatter, error) {
	md = bytes.TrimPrefix(md, []byte("\ufeff"))
	rest, ok := cutLine(md, "---")
	if !ok {
		return nil, errors.New("it must begin with YAML frontmatter: a line ---, the fields, and a line ---")
	}
	var block []byte
	for off := 0; block == nil; {
		line := rest[off:]
		if _, ok := cutLine(line, "---"); ok {
			block = rest[:off:off]
			break
		}
		i := bytes.IndexByte(line, '\n')
		if i < 0 {
			return nil, errors.New("its frontmatter has no closing --- line")
		}
		off += i + 1
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(block, &doc); err != nil {
		return nil, fmt.Errorf("its frontmatter is not valid YAML: %w", err)
	}
	v, err := yamlValue(&doc, 0)
	if err != nil {
		return nil, fmt.Errorf("its frontmatter: %w", err)
	}
	fields, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("its frontmatter must be a YAML mapping of fields")
	}
	raw, err := json.Marshal(fields)
	if err != nil {
		return nil, fmt.Errorf("its frontmatter cannot be rendered as JSON: %w", err)
	}
	fm := &frontmatter{raw: raw}
	fm.name, _ = fields["name"].(string)
	fm.description, _ = fields["description"].(string)
	if fm.name == "" || fm.description == "" {
		return nil, errors.New("its frontmatter needs a name and a description, both non-empty strings")
	}
	if meta, ok := fields["metadata"].(map[string]any); ok {
		for k := range meta {
			if strings.HasPrefix(k, "io.modelcontextprotocol/") {
				return nil, fmt.Errorf("frontmatter metadata key %q: the prefix io.modelcontextprotocol/ is reserved for MCP extensions, which define no such key", k)
			}
		}
	}
	return fm, nil
}

// yamlValue renders a YAML node as JSON values, verbatim: a timestamp stays the string it
// was written as (a plain decode would turn 2024-01-01 into a time), mapping keys are their
// text. depth bounds the nesting, aliases included.
func yamlValue(n *yaml.Node, depth int) (any, error) {
	if depth > 64 {
		return nil, errors.New("nested more than 64 levels deep")
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return yamlValue(n.Content[0], depth+1)
	case yaml.AliasNode:
		return yamlValue(n.Alias, depth+1)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: a key must be a scalar", k.Line)
			}
			v, err := yamlValue(n.Content[i+1], depth+1)
			if err != nil {
				return nil, err
			}
			m[k.Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := yamlValue(c, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	switch n.ShortTag() {
	case "!!null", "!!bool", "!!int", "!!float":
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		return v, nil
	}
	return n.Value, nil // strings, timestamps, and any other tag: as written
}

// cutLine reports whether b starts with a line that is want (then spaces or tabs), and
// returns what follows that line.
func cutLine(b []byte, want string) ([]byte, bool) {
	if !bytes.HasPrefix(b, []byte(want)) {
		return nil, false
	}
	rest := bytes.TrimLeft(b[len(want):], " \t")
	switch {
	case len(rest) == 0:
		return rest, true
	case rest[0] == '\n':
		return rest[1:], true
	case len(rest) > 1 && rest[0] == '\r' && rest[1] == '\n':
		return rest[2:], true
	}
	return nil, false
}

// mimeTypeOf names a file's type by its extension, or else by whether it is text.
func mimeTypeOf(name string, data []byte) string {
	if t := extMimeType(name); t != "" {
		return t
	}
	if utf8.Valid(data) {
		return "text/plain"
	}
	return "application/octet-stream"
}

// extMimeType names a file's type by its extension, for the files skills hold most; "" for
// another extension.
func extMimeType(name string) string {
	switch strings.ToLower(path.Ext(name)) {
	case ".md", ".markdown":
		return "text/markdown"
	case ".txt":
		return "text/plain"
	case ".py":
		return "text/x-python"
	case ".sh":
		return "text/x-shellscript"
	case ".js", ".mjs":
		return "text/javascript"
	case ".ts":
		return "text/x-typescript"
	case ".json":
		return "application/json"
	case ".yaml", ".yml":
		return "application/yaml"
	case ".html", ".htm":
		return "text/html"
	case ".csv":
		return "text/csv"
	case ".xml":
		return "application/xml"
	case ".png":
		return "image/png"
	case ".jpg", ".jpeg":
		return "image/jpeg"
	case ".svg":
		return "image/svg+xml"
	case ".pdf":
		return "application/pdf"
	}
	return ""
}

// skillSet is what a registry snapshot serves of skills, derived from them once per change.
type skillSet struct {
	byURI map[string]*skill     // by the URI of SKILL.md
	uris  []string              // sorted: the order of skills/list
	files map[string]*skillFile // every file of every skill, by URI
	dirs  map[string]*skillDir  // every directory of every skill, by URI
	live  []*skill              // the dynamic skills, longest root first
}

// skillDir is a directory of a skill: its children, files and directories.
type skillDir struct {
	keys []string                   // the children's URIs, sorted
	defs map[string]json.RawMessage // their Resource definitions
}

func (d *skillDir) add(uri string, def json.RawMessage) {
	if _, ok := d.defs[uri]; !ok {
		d.keys = append(d.keys, uri)
	}
	d.defs[uri] = def
}

func (ss *skillSet) all() map[string]*skill {
	if ss == nil {
		return nil
	}
	return ss.byURI
}

// reader returns what reads the skill file at uri, or nil when no skill has it: a file of
// the manifest, or one a dynamic skill reads when asked.
func (ss *skillSet) reader(uri string) ResourceHandler {
	if ss == nil {
		return nil
	}
	if f := ss.files[uri]; f != nil {
		return f.read
	}
	sk, rel := ss.liveAt(uri)
	if sk == nil || rel == "." {
		return nil
	}
	return func(context.Context, *ReadResourceRequest) (*ReadResourceResult, error) {
		info, err := fs.Stat(sk.live, rel)
		if errors.Is(err, fs.ErrNotExist) || (err == nil && info.IsDir()) {
			return nil, ErrResourceNotFound
		}
		if err == nil && info.Size() > MaxSkillBytes {
			err = fmt.Errorf("%s is %d bytes, more than the %d a skill may hold", uri, info.Size(), MaxSkillBytes)
		}
		var data []byte
		if err == nil {
			data, err = fs.ReadFile(sk.live, rel)
		}
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Internal error: reading " + uri + ": " + err.Error()}
		}
		f := &skillFile{uri: uri, mimeType: mimeTypeOf(rel, data), data: data}
		return f.read(nil, nil)
	}
}

// liveAt finds the dynamic skill whose directory holds uri, and uri's path in it ("." for
// the skill's root); nil when no dynamic skill does, or the path is not a valid one.
func (ss *skillSet) liveAt(uri string) (*skill, string) {
	for _, sk := range ss.live {
		rest, ok := strings.CutPrefix(strings.TrimSuffix(uri, "/"), sk.root)
		if !ok || (rest != "" && rest[0] != '/') {
			continue
		}
		if rest == "" {
			return sk, "."
		}
		segs := strings.Split(rest[1:], "/")
		for i, s := range segs {
			var err error
			if segs[i], err = url.PathUnescape(s); err != nil {
				return nil, ""
			}
		}
		rel := strings.Join(segs, "/")
		if !fs.ValidPath(rel) {
			return nil, ""
		}
		return sk, rel
	}
	return nil, ""
}

// liveDir reads a directory of a dynamic skill as a skillDir; nil when uri is none.
func (ss *skillSet) liveDir(uri string) *skillDir {
	sk, rel := ss.liveAt(uri)
	if sk == nil {
		return nil
	}
	entries, err := fs.ReadDir(sk.live, rel)
	if err != nil {
		return nil
	}
	d := &skillDir{defs: map[string]json.RawMessage{}}
	base := strings.TrimSuffix(uri, "/")
	for _, e := range entries {
		child := base + "/" + url.PathEscape(e.Name())
		if child == sk.uri {
			d.add(child, sk.files[0].def) // SKILL.md is the registered one
			continue
		}
		r := &Resource{URI: child, Name: e.Name(), MimeType: DirectoryMimeType}
		if !e.IsDir() {
			r.MimeType = extMimeType(e.Name()) // unknown without reading it: none
			if info, err := e.Info(); err == nil {
				r.Size = info.Size()
			}
		}
		def, _ := json.Marshal(r)
		d.add(child, def)
	}
	if rel == "." {
		d.add(sk.uri, sk.files[0].def)
	}
	slices.Sort(d.keys)
	return d
}

// declare adds the extension to a snapshot's capabilities when it serves skills.
func (ss *skillSet) declare(caps map[string]any) {
	if ss == nil || len(ss.byURI) == 0 {
		return
	}
	ext, _ := caps["extensions"].(map[string]any)
	if ext == nil {
		ext = map[string]any{}
		caps["extensions"] = ext
	}
	ext[SkillsExtension] = map[string]any{"directoryRead": true}
}

// indexSkills derives a skillSet. Two skills may share files (a nested skill's are its
// enclosing skill's too), but not disagree on one.
func indexSkills(byURI map[string]*skill) (*skillSet, error) {
	ss := &skillSet{byURI: byURI, uris: sortedKeys(byURI), files: map[string]*skillFile{}, dirs: map[string]*skillDir{}}
	dir := func(uri string) *skillDir {
		d := ss.dirs[uri]
		if d == nil {
			d = &skillDir{defs: map[string]json.RawMessage{}}
			ss.dirs[uri] = d
		}
		return d
	}
	for _, u := range ss.uris {
		sk := byURI[u]
		for _, f := range sk.files {
			if g, ok := ss.files[f.uri]; ok && g.digest != f.digest {
				return nil, fmt.Errorf("mcp: skill %s: file %s differs from the one another skill serves at that URI", sk.uri, f.uri)
			}
			if g := ss.files[f.uri]; g == nil || f.uri == u { // a skill's own SKILL.md listing wins
				ss.files[f.uri] = f
			}
			parent := sk.root
			for _, seg := range f.rel[:len(f.rel)-1] {
				child := parent + "/" + url.PathEscape(seg)
				def, _ := json.Marshal(&Resource{URI: child, Name: seg, MimeType: DirectoryMimeType})
				dir(parent).add(child, def)
				parent = child
			}
			dir(parent).add(f.uri, ss.files[f.uri].def)
		}
	}
	for _, d := range ss.dirs {
		slices.Sort(d.keys)
	}
	for _, sk := range byURI {
		if sk.live != nil {
			ss.live = append(ss.live, sk)
		}
	}
	slices.SortFunc(ss.live, func(a, b *skill) int { return len(b.root) - len(a.root) })
	return ss, nil
}

// skillsOnly serves a method of the extension only while the server declares it: otherwise
// the method does not exist (-32601), as for any capability not advertised.
func skillsOnly(serve func(*Server, context.Context, *Request) (any, error)) func(*Server, context.Context, *Request) (any, error) {
	return func(s *Server, ctx context.Context, req *Request) (any, error) {
		if len(s.reg.Load().skills.all()) == 0 {
			return nil, errMethodNotFound(req.Method(), " (this server serves no skills)")
		}
		return serve(s, ctx, req)
	}
}

// listSkills serves skills/list: a page of entries, each whole (SEP-2640 Listing Skills).
var listSkills = skillsOnly(list("skills", func(r *registry) ([]string, map[string]*skill) {
	if r.skills == nil {
		return nil, nil
	}
	return r.skills.uris, r.skills.byURI
}))

// getSkill serves skills/get: the entry of the skill whose SKILL.md is params.uri, or
// -32602 (SEP-2640 Getting a Skill).
func (s *Server) getSkill(_ context.Context, req *Request) (any, error) {
	uri, err := asString(req.params[pURI], "uri")
	if err != nil {
		return nil, err
	}
	sk := s.reg.Load().skills.all()[uri]
	if sk == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: "Invalid params: no skill is served at " + uri + "; skills/list names the skills, by the URI of their SKILL.md",
			Data:    map[string]string{"uri": uri}}
	}
	return json.RawMessage(append(append([]byte(`{"skill":`), sk.entry...), '}')), nil
}

// readDirectory serves resources/directory/read: a page of a directory's children, files and
// directories (mimeType inode/directory), or -32602 for a URI that is no directory (SEP-2640
// Reading Directories).
func (s *Server) readDirectory(_ context.Context, req *Request) (any, error) {
	uri, err := asString(req.params[pURI], "uri")
	if err != nil {
		return nil, err
	}
	var d *skillDir
	if ss := s.reg.Load().skills; ss != nil {
		if d = ss.liveDir(uri); d == nil {
			d = ss.dirs[strings.TrimSuffix(uri, "/")]
		}
	}
	if d == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: "Invalid params: " + uri + " is not a directory resource of this server; read a skill's directory, such as a SKILL.md's URI without /SKILL.md",
			Data:    map[string]string{"uri": uri}}
	}
	keys, next, err := s.listPage(req, d.keys)
	if err != nil {
		return nil, err
	}
	items := make([]json.RawMessage, len(keys))
	for i, k := range keys {
		items[i] = d.defs[k]
	}
	return listResult("resources", items, next), nil
}
