package kubernetes_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// manifest is what relay.yaml holds, each document decoded strictly into its API type.
type manifest struct {
	secrets     []*corev1.Secret
	deployments []*appsv1.Deployment
	services    []*corev1.Service
}

// load decodes every document of relay.yaml with sigs.k8s.io/yaml's strict unmarshal into
// the type its apiVersion and kind name: a field the type does not have (a typo, a field
// at the wrong level) or a field given twice fails the test, as the API server would
// refuse it.
func load(t *testing.T) *manifest {
	t.Helper()
	data, err := os.ReadFile("relay.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := &manifest{}
	for i, doc := range bytes.Split(data, []byte("\n---\n")) {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		var obj any
		switch tm.APIVersion + " " + tm.Kind {
		case "v1 Secret":
			s := &corev1.Secret{}
			m.secrets, obj = append(m.secrets, s), s
		case "apps/v1 Deployment":
			d := &appsv1.Deployment{}
			m.deployments, obj = append(m.deployments, d), d
		case "v1 Service":
			s := &corev1.Service{}
			m.services, obj = append(m.services, s), s
		default:
			t.Fatalf("document %d is a %q %q, which this test does not know", i, tm.APIVersion, tm.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			t.Fatalf("document %d (%s): %v", i, tm.Kind, err)
		}
	}
	return m
}

func (m *manifest) deployment(t *testing.T, name string) *appsv1.Deployment {
	t.Helper()
	for _, d := range m.deployments {
		if d.Name == name {
			return d
		}
	}
	t.Fatalf("relay.yaml has no Deployment %q", name)
	return nil
}

func (m *manifest) service(t *testing.T, name string) *corev1.Service {
	t.Helper()
	for _, s := range m.services {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("relay.yaml has no Service %q", name)
	return nil
}

// containerPort resolves a port given by name or number to a port the container declares.
func containerPort(t *testing.T, c *corev1.Container, p intstr.IntOrString) int32 {
	t.Helper()
	for _, cp := range c.Ports {
		if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
			return cp.ContainerPort
		}
	}
	t.Fatalf("container %s declares no port %s", c.Name, p.String())
	return 0
}

func env(c *corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

// checkSelects checks that a Deployment's selector matches its own pods, and that a Service
// sends its traffic to those pods and to no pod of the other Deployments.
func checkSelects(t *testing.T, m *manifest, d *appsv1.Deployment, svc *corev1.Service) {
	t.Helper()
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || sel.Empty() {
		t.Fatalf("Deployment %s: selector %v: %v", d.Name, d.Spec.Selector, err)
	}
	if !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("Deployment %s: its selector %v does not match its pods' labels %v", d.Name, sel, d.Spec.Template.Labels)
	}
	svcSel := labels.SelectorFromSet(svc.Spec.Selector)
	if len(svc.Spec.Selector) == 0 || !svcSel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("Service %s: its selector %v does not select the pods of %s (%v)", svc.Name, svc.Spec.Selector, d.Name, d.Spec.Template.Labels)
	}
	for _, other := range m.deployments {
		if other != d && svcSel.Matches(labels.Set(other.Spec.Template.Labels)) {
			t.Errorf("Service %s also selects the pods of %s", svc.Name, other.Name)
		}
	}
}

// The fleet: three replicas of the instance behind a Service, the key from the Secret, the
// Redis named by the Redis Service, probes on the paths the instance serves, and resources
// requested.
func TestManifestFitsTogether(t *testing.T) {
	m := load(t)
	if len(m.secrets) != 1 || len(m.deployments) != 2 || len(m.services) != 2 {
		t.Fatalf("relay.yaml: %d Secrets, %d Deployments, %d Services; want 1, 2 (relay, relay-redis), 2", len(m.secrets), len(m.deployments), len(m.services))
	}
	relay, redis := m.deployment(t, "relay"), m.deployment(t, "relay-redis")
	relaySvc, redisSvc := m.service(t, "relay"), m.service(t, "relay-redis")
	if relay.Spec.Replicas == nil || *relay.Spec.Replicas != 3 {
		t.Errorf("Deployment relay: replicas %v, want 3", relay.Spec.Replicas)
	}
	checkSelects(t, m, relay, relaySvc)
	checkSelects(t, m, redis, redisSvc)

	if n := len(relay.Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("Deployment relay: %d containers, want 1", n)
	}
	c := &relay.Spec.Template.Spec.Containers[0]
	// The port the instance listens on (-http ADDR) is the one the container declares, the
	// Service targets, and the probes ask.
	i := slices.Index(c.Args, "-http")
	if i < 0 || i+1 >= len(c.Args) {
		t.Fatalf("container relay: args %q have no -http ADDR", c.Args)
	}
	_, listenPort, err := net.SplitHostPort(c.Args[i+1])
	if err != nil {
		t.Fatalf("container relay: -http %q: %v", c.Args[i+1], err)
	}
	if host, _, _ := net.SplitHostPort(c.Args[i+1]); host != "0.0.0.0" && host != "" {
		t.Errorf("container relay: -http %s listens on %s only, which neither the Service nor the kubelet reach", c.Args[i+1], host)
	}
	if len(relaySvc.Spec.Ports) != 1 {
		t.Fatalf("Service relay: %d ports, want 1", len(relaySvc.Spec.Ports))
	}
	if got := containerPort(t, c, relaySvc.Spec.Ports[0].TargetPort); strconv.Itoa(int(got)) != listenPort {
		t.Errorf("Service relay targets container port %d, but the instance listens on %s", got, listenPort)
	}
	for _, p := range []struct {
		name, path string
		probe      *corev1.Probe
	}{{"readiness", "/readyz", c.ReadinessProbe}, {"liveness", "/healthz", c.LivenessProbe}} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("container relay: no HTTP %s probe", p.name)
			continue
		}
		if p.probe.HTTPGet.Path != p.path {
			t.Errorf("container relay: %s probe on %s, want %s", p.name, p.probe.HTTPGet.Path, p.path)
		}
		if got := containerPort(t, c, p.probe.HTTPGet.Port); strconv.Itoa(int(got)) != listenPort {
			t.Errorf("container relay: %s probe on port %d, but the instance listens on %s", p.name, got, listenPort)
		}
	}

	// The state key comes from the Secret; its placeholder is too short to be used.
	key := env(c, "RELAY_STATE_KEY")
	if key == nil || key.Value != "" || key.ValueFrom == nil || key.ValueFrom.SecretKeyRef == nil {
		t.Fatalf("container relay: RELAY_STATE_KEY %+v, want it from a Secret", key)
	}
	ref := key.ValueFrom.SecretKeyRef
	secret := m.secrets[0]
	placeholder, ok := secret.StringData[ref.Key]
	if secret.Name != ref.Name || !ok {
		t.Errorf("RELAY_STATE_KEY names the key %q of Secret %q; relay.yaml has Secret %q with %v", ref.Key, ref.Name, secret.Name, secret.StringData)
	}
	if len(placeholder) >= 32 {
		t.Errorf("the Secret's placeholder %q is a usable key (32 bytes or more): a fleet applied as is would run with it", placeholder)
	}

	// RELAY_REDIS_URL names the Redis Service, on the port it serves.
	redisURL := env(c, "RELAY_REDIS_URL")
	if redisURL == nil {
		t.Fatal("container relay: no RELAY_REDIS_URL")
	}
	u, err := url.Parse(redisURL.Value)
	if err != nil || u.Scheme != "redis" {
		t.Fatalf("RELAY_REDIS_URL %q: want a redis:// URL (%v)", redisURL.Value, err)
	}
	if u.Hostname() != redisSvc.Name || len(redisSvc.Spec.Ports) != 1 || u.Port() != strconv.Itoa(int(redisSvc.Spec.Ports[0].Port)) {
		t.Errorf("RELAY_REDIS_URL %q does not name Service %s on its port %v", redisURL.Value, redisSvc.Name, redisSvc.Spec.Ports)
	}
	if len(redis.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("Deployment relay-redis: want 1 container")
	}
	if got := containerPort(t, &redis.Spec.Template.Spec.Containers[0], redisSvc.Spec.Ports[0].TargetPort); got != 6379 {
		t.Errorf("Service relay-redis targets container port %d, want Redis's 6379", got)
	}

	for _, d := range m.deployments {
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
				t.Errorf("Deployment %s, container %s: no CPU or memory request (%v)", d.Name, c.Name, c.Resources.Requests)
			}
			if c.ReadinessProbe == nil || c.LivenessProbe == nil {
				t.Errorf("Deployment %s, container %s: no readiness or liveness probe", d.Name, c.Name)
			}
		}
	}
}

// A field that no Kubernetes type has is refused, as it would be by the API server: the
// decoding above is strict.
func TestStrictDecodingRefusesUnknownFields(t *testing.T) {
	doc := []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec:\n  replica: 3\n")
	if err := yaml.UnmarshalStrict(doc, &appsv1.Deployment{}); err == nil || !strings.Contains(err.Error(), "replica") {
		t.Errorf("a Deployment with spec.replica (for replicas): %v; want an error naming it", err)
	}
}

// The instance answers the probes of relay.yaml on the paths and port it gives: the
// container's command and args are run for real (examples/everything, built from the
// repository root), on 127.0.0.1 in place of 0.0.0.0, with a key of the shape the
// manifest's comment makes; and the Secret's placeholder is refused at start.
func TestInstanceServesTheManifestsProbes(t *testing.T) {
	m := load(t)
	c := &m.deployment(t, "relay").Spec.Template.Spec.Containers[0]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), filepath.Base(c.Command[0]))
	if goruntime.GOOS == "windows" {
		bin += ".exe"
	}
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./examples/everything")
	build.Dir = filepath.Join("..", "..", "..") // the repository root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/everything: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	args := slices.Clone(c.Args)
	args[slices.Index(args, "-http")+1] = addr

	// The placeholder of the Secret is refused, with how to make a key.
	placeholder := m.secrets[0].StringData[env(c, "RELAY_STATE_KEY").ValueFrom.SecretKeyRef.Key]
	refused := exec.CommandContext(ctx, bin, args...)
	refused.Env = append(os.Environ(), "RELAY_STATE_KEY="+placeholder)
	out, _ := refused.CombinedOutput()
	if refused.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "at least 32") {
		t.Errorf("the instance with the Secret's placeholder as its key: exit %d, %q; want it refused", refused.ProcessState.ExitCode(), out)
	}

	raw := make([]byte, 32)
	rand.Read(raw)
	cmd := exec.Command(bin, args...)
	// The key as a Secret made --from-file of `openssl rand -hex 32 > key` gives it, and the
	// manifest's RELAY_REDIS_URL, whose host does not exist here: an instance starts, and
	// its probes answer, while its Redis cannot be reached (as while the Redis pod starts).
	cmd.Env = append(os.Environ(), "RELAY_STATE_KEY="+hex.EncodeToString(raw)+"\n",
		"RELAY_REDIS_URL="+env(c, "RELAY_REDIS_URL").Value)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if cmd.Process.Signal(syscall.SIGTERM) != nil { // Windows cannot send it: kill
			cmd.Process.Kill()
		}
		cmd.Wait()
	}()
	// The container's port (TestManifestFitsTogether checks that the probes ask it) stands
	// for the one the instance listens on here.
	for _, probe := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
		url := "http://" + addr + probe.HTTPGet.Path
		for {
			res, err := http.Get(url)
			if err == nil {
				res.Body.Close()
				if res.StatusCode == http.StatusOK {
					break
				}
				err = fmt.Errorf("%s", res.Status)
			}
			select {
			case <-ctx.Done():
				t.Fatalf("GET %s never answered 200: %v", url, err)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}
