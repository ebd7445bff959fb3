// Package filewatch tells when a file has changed by looking at it, on every OS and with no
// notification facility: a change counts once the file has stayed the same for one more
// look, since an editor, a copy or a build may write it in several steps.
package filewatch

import "os"

// File is a file looked at now and then. It is not safe for concurrent use: one goroutine
// (an actor's loop, a ticker's) looks.
type File struct {
	path       string
	last, seen os.FileInfo // as last reported; a change waiting to stay the same
}

// New takes the first look at the file at path (which need not exist yet).
func New(path string) *File {
	last, _ := os.Stat(path)
	return &File{path: path, last: last}
}

// Look looks at the file again, and reports whether it has changed (its identity, size,
// modification time or mode) since the last change reported, and stayed the same since the
// previous look. A file that cannot be read (being replaced, say) has not changed yet.
func (f *File) Look() bool {
	now, err := os.Stat(f.path)
	switch {
	case err != nil:
		f.seen = nil
	case same(now, f.last):
		f.seen = nil
	case f.seen != nil && same(now, f.seen):
		f.last, f.seen = now, nil
		return true
	default:
		f.seen = now
	}
	return false
}

// same reports whether two looks at a path saw the same file, unchanged.
func same(a, b os.FileInfo) bool {
	return a != nil && b != nil && os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime()) && a.Mode() == b.Mode()
}
