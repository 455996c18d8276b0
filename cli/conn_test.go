package cli

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockscope/lockscope/actions"
	"github.com/lockscope/lockscope/internal/redistest"
)

// writeTLSFiles makes a CA and a server certificate for 127.0.0.1 in dir.
func writeTLSFiles(t *testing.T, dir string) (caFile, certFile, keyFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "lockscope test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("ca.pem", "CERTIFICATE", caDER), write("server.pem", "CERTIFICATE", srvDER), write("server.key", "EC PRIVATE KEY", keyDER)
}

func TestCLITLS(t *testing.T) {
	dir := t.TempDir()
	caFile, certFile, keyFile := writeTLSFiles(t, dir)
	tlsPort, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	s := redistest.Start(t, redistest.WithArgs("--tls-port", strconv.Itoa(tlsPort), "--tls-cert-file", certFile,
		"--tls-key-file", keyFile, "--tls-ca-cert-file", caFile, "--tls-auth-clients", "no"))
	seedLocks(t, s.Client())
	url := "rediss://127.0.0.1:" + strconv.Itoa(tlsPort)

	r := runCLI(t, cliOpts{}, "ls", "--json", "--tls-ca", caFile, "--redis", url)
	expectExit(t, r, exitOK)
	if n := len(jsonLines(t, r.stdout)); n != 5 {
		t.Fatalf("%d locks over TLS, want 5:\n%s", n, r)
	}
	r = runCLI(t, cliOpts{}, "release", "lock:old", "--expect", oldLock, "--tls-insecure", "--redis", url)
	expectExit(t, r, exitOK)
	// Without the CA the certificate is not trusted: refused, one line, not a hang.
	r = runCLI(t, cliOpts{}, "ls", "--redis", url)
	expectExit(t, r, exitUnreachable)
	if !strings.Contains(r.stderr, "certificate") {
		t.Errorf("the TLS failure is not explained:\n%s", r)
	}
	// A plain connection to the TLS port is closed without a word: the message says why it may be.
	r = runCLI(t, cliOpts{}, "ls", "--redis", "redis://127.0.0.1:"+strconv.Itoa(tlsPort))
	expectExit(t, r, exitUnreachable)
	if !strings.Contains(r.stderr, "rediss://") {
		t.Errorf("a plain connection to a TLS port does not suggest rediss://:\n%s", r)
	}
	bad := filepath.Join(dir, "bad.pem")
	if err := os.WriteFile(bad, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	expectExit(t, runCLI(t, cliOpts{}, "ls", "--tls-ca", bad, "--redis", url), exitUsage)
}

func TestCLIUnixSocket(t *testing.T) {
	// Unix socket paths are limited to ~100 bytes: keep it short.
	dir, err := os.MkdirTemp("", "ls5")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "r.sock")
	s := redistest.Start(t, redistest.WithArgs("--unixsocket", sock))
	seedLocks(t, s.Client())
	r := runCLI(t, cliOpts{}, "show", "lock:old", "--json", "--redis", "unix://"+sock)
	expectExit(t, r, exitOK)
	if obj := jsonLines(t, r.stdout)[0]; obj["value"] != oldLock {
		t.Fatalf("show over a unix socket: %v", obj)
	}
}

func TestCLICluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	c := cl.Client()
	ctx := context.Background()
	keys := []string{"lock:a", "lock:b", "lock:c", "lock:d", "lock:e", "lock:f"}
	masters := map[string]bool{}
	for _, k := range keys {
		if err := c.Set(ctx, k, oldLock, time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
		node, err := c.MasterForKey(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		masters[node.Options().Addr] = true
	}
	if len(masters) < 2 {
		t.Fatalf("the keys landed on %d masters; the test needs several", len(masters))
	}
	seed := []string{"--cluster", "--redis", redisURL(cl.Addrs[0])}

	r := runCLI(t, cliOpts{}, append([]string{"ls", "--json"}, seed...)...)
	expectExit(t, r, exitOK)
	objs := jsonLines(t, r.stdout)
	if len(objs) != len(keys) {
		t.Fatalf("%d locks from the cluster, want %d:\n%s", len(objs), len(keys), r)
	}
	for _, o := range objs {
		checkFields(t, "cluster ls", o, lsFields)
		node, _ := c.MasterForKey(ctx, o["key"].(string))
		inst := o["instances"].([]any)
		if len(inst) != 1 || inst[0].(map[string]any)["addr"] != node.Options().Addr {
			t.Errorf("%v: instances %v, want the master %s", o["key"], inst, node.Options().Addr)
		}
	}
	// Without --cluster the seed turns out to be a cluster node: the whole cluster is read
	// all the same, and stderr says so once; a key on another node is found.
	r = runCLI(t, cliOpts{}, "ls", "--json", "--redis", redisURL(cl.Addrs[0]))
	expectExit(t, r, exitOK)
	if n := len(jsonLines(t, r.stdout)); n != len(keys) || strings.Count(r.stderr, "is a cluster node: reading the whole cluster (3 nodes)") != 1 {
		t.Fatalf("ls of a cluster node without --cluster: %d locks, want %d, and one notice:\n%s", n, len(keys), r)
	}
	for _, k := range keys {
		expectExit(t, runCLI(t, cliOpts{}, "show", k, "--redis", redisURL(cl.Addrs[0])), exitOK)
	}
	// Every node is reached with the first URL's credentials: a seed that asks for others is refused.
	r = runCLI(t, cliOpts{}, "ls", "--cluster", "--redis", redisURL(cl.Addrs[0]), "--redis", "redis://u:pw@"+cl.Addrs[1])
	expectExit(t, r, exitUsage)
	if strings.Contains(r.stderr, "pw") || !strings.Contains(r.stderr, "another user, password or TLS setting") {
		t.Errorf("a seed with other credentials:\n%s", r)
	}

	// Act on keys owned by every master, through the one seed: each result names the master
	// holding its key, not the seed.
	for _, k := range keys {
		r = runCLI(t, cliOpts{}, append([]string{"release", k, "--expect", oldLock, "--json"}, seed...)...)
		expectExit(t, r, exitOK)
		node, _ := c.MasterForKey(ctx, k)
		inst := jsonLines(t, r.stdout)[0]["instances"].([]any)
		if addr := inst[0].(map[string]any)["addr"]; addr != node.Options().Addr {
			t.Errorf("release %s ran on %v, want the master %s", k, addr, node.Options().Addr)
		}
	}
	if n := c.Exists(ctx, keys...).Val(); n != 0 {
		t.Fatalf("%d keys left after releasing all", n)
	}
	r = runCLI(t, cliOpts{}, append([]string{"audit", "--json"}, seed...)...)
	expectExit(t, r, exitOK)
	records := jsonLines(t, r.stdout)
	if len(records) != len(keys) {
		t.Fatalf("%d audit records, want %d", len(records), len(keys))
	}
	// The records are read from the master owning the stream's slot, and say so.
	streamNode, _ := c.MasterForKey(ctx, actions.DefaultAuditStream)
	for _, rec := range records {
		if src := rec["sources"].([]any); len(src) != 1 || src[0] != streamNode.Options().Addr {
			t.Errorf("audit record of %v: sources %v, want the stream's master %s", rec["key"], src, streamNode.Options().Addr)
		}
	}

	// docs/acl.md's roles on a cluster (the seed is given without --cluster: the inspector
	// may tell that it is a cluster node).
	applyACLRules(t, cl.Nodes, true)
	aclKeys := []string{"lock:acl:1", "lock:acl:2", "lock:acl:3", "lock:acl:4"}
	seedACLLocks(t, c, aclKeys)
	checkACLRoles(t, cl.Addrs[0], c, aclKeys)
}
