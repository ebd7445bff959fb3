//go:build !unix

package redistest

// Pause would stop the server's process without ending it; this system has no SIGSTOP, so
// it skips the test.
func (s *Server) Pause() { s.tb.Skip("redistest: Pause needs SIGSTOP (Unix)") }

// Resume lets a paused server go on; see Pause.
func (s *Server) Resume() {}
