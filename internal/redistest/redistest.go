// Package redistest starts a real redis-server for a test: on a free port of 127.0.0.1, with
// nothing persisted, in plain TCP or TLS, stopped when the test ends, and stoppable and
// restartable on the same port so that a test can watch its client lose Redis and get it
// back.
package redistest

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// RequireEnv is the environment variable that, set to 1, makes Start fail rather than skip
// when redis-server is not installed: CI sets it so that the Redis tests cannot pass by not
// running.
const RequireEnv = "RELAY_REQUIRE_REDIS"

// Server is a redis-server process the test started.
type Server struct {
	// URL is the server's address as a redis:// URL.
	URL string
	// Addr is its host:port.
	Addr string
	// CA is, for a server StartTLS started, the pool holding the certificate authority
	// that signed its certificate, for a client to trust; nil otherwise.
	CA *x509.CertPool

	tb   testing.TB
	bin  string
	dir  string
	port int
	tls  *tls.Config // for PING, when the server speaks only TLS
	args []string    // the TLS arguments, when it does

	mu     sync.Mutex
	cmd    *exec.Cmd     // nil while stopped
	exited chan struct{} // closed once cmd has exited and been reaped
}

// Start launches redis-server on a free port of 127.0.0.1, with no snapshot and no append
// only file, its files in a temporary directory, and returns once it answers PING. The
// server is stopped when the test ends. Start skips the test when redis-server is not
// installed, unless RELAY_REQUIRE_REDIS=1, when it fails it.
func Start(tb testing.TB) *Server {
	tb.Helper()
	return start(tb, false)
}

// StartTLS is Start for a server that speaks only TLS, with a certificate for 127.0.0.1
// signed by a certificate authority made for the test (Server.CA); its URL is rediss://.
// Clients need no certificate of their own.
func StartTLS(tb testing.TB) *Server {
	tb.Helper()
	return start(tb, true)
}

func start(tb testing.TB, useTLS bool) *Server {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			tb.Fatalf("redis-server is not installed and %s=1: install it (Debian package redis-server)", RequireEnv)
		}
		tb.Skip("redis-server is not installed (Debian package redis-server); set " + RequireEnv + "=1 to fail instead")
	}
	s := &Server{tb: tb, bin: bin, dir: tb.TempDir()}
	tb.Cleanup(s.Stop)
	if useTLS {
		s.makeCertificates()
	}
	// A free port may be taken by another process between our probe and the server's bind:
	// try a few.
	for attempt := 0; ; attempt++ {
		s.port = freePort(tb)
		err := s.start()
		if err == nil {
			break
		}
		if attempt == 4 {
			tb.Fatalf("redistest: %v", err)
		}
	}
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
	s.URL = "redis://" + s.Addr
	if useTLS {
		s.URL = "rediss://" + s.Addr
	}
	return s
}

// Stop kills the server, as a crash or a lost host would; its data is lost with it. Stopping
// a stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill() // a paused process dies of SIGKILL too
	<-s.exited
	s.cmd, s.exited = nil, nil
}

// Restart starts the server again on the same port, empty, after Stop, and returns once it
// answers PING.
func (s *Server) Restart() {
	s.tb.Helper()
	s.Stop()
	// The port was just ours; another process taking it meanwhile is unlikely, so a few
	// tries cover the rare slow release of the listening socket.
	var err error
	for range 20 {
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.tb.Fatalf("redistest: restarting on port %d: %v", s.port, err)
}

// start runs redis-server on s.port and waits until it answers PING.
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	logPath := filepath.Join(s.dir, "redis.log")
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	port := []string{"--port", strconv.Itoa(s.port)}
	if s.tls != nil {
		port = append([]string{"--port", "0", "--tls-port", strconv.Itoa(s.port)}, s.args...)
	}
	cmd := exec.Command(s.bin, append(port, "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir, "--daemonize", "no")...)
	cmd.Stdout, cmd.Stderr = log, log // files: exec starts no goroutine to copy them
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting redis-server: %w", err)
	}
	// One goroutine per process reaps it, so that a server that exits early (its port was
	// taken) is noticed; it ends with the process, which Stop ends.
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if ping(s.port, s.tls) == nil {
			s.cmd, s.exited = cmd, exited
			return nil
		}
		gone := false
		select {
		case <-exited:
			gone = true
		default:
		}
		if gone || time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			tail, _ := os.ReadFile(logPath)
			return fmt.Errorf("redis-server on port %d did not answer PING; its log:\n%s", s.port, lastLines(string(tail), 10))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func ping(port int, config *tls.Config) error {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	var c net.Conn
	var err error
	if config != nil {
		c, err = tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, config)
	} else {
		c, err = net.DialTimeout("tcp", addr, time.Second)
	}
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

// makeCertificates writes a certificate authority and a server certificate for 127.0.0.1
// signed by it into the server's directory.
func (s *Server) makeCertificates() {
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			s.tb.Fatal(err)
		}
		return k
	}
	caKey, serverKey := key(), key()
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "redistest CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		s.tb.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	server := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	serverDER, err := x509.CreateCertificate(rand.Reader, server, caCert, &serverKey.PublicKey, caKey)
	if err != nil {
		s.tb.Fatal(err)
	}
	serverKeyDER, err := x509.MarshalECPrivateKey(serverKey)
	if err != nil {
		s.tb.Fatal(err)
	}
	write := func(name, kind string, der []byte) string {
		path := filepath.Join(s.dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
			s.tb.Fatal(err)
		}
		return path
	}
	s.args = []string{
		"--tls-cert-file", write("server.pem", "CERTIFICATE", serverDER),
		"--tls-key-file", write("server-key.pem", "EC PRIVATE KEY", serverKeyDER),
		"--tls-ca-cert-file", write("ca.pem", "CERTIFICATE", caDER),
		"--tls-auth-clients", "no",
	}
	s.CA = x509.NewCertPool()
	s.CA.AddCert(caCert)
	s.tls = &tls.Config{RootCAs: s.CA, MinVersion: tls.VersionTLS12}
}

func freePort(tb testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("redistest: finding a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
