// Package config reads lockscope's named connections ("contexts", as kubectl and k9s call
// them) from $XDG_CONFIG_HOME/lockscope/config.yaml (else ~/.config/lockscope/config.yaml,
// or the file $LOCKSCOPE_CONFIG names):
//
//	contexts:
//	  prod:
//	    redis: [rediss://10.0.0.1:6379, rediss://10.0.0.2:6379]
//	    mode: cluster          # standalone (one URL), cluster, redlock or independent (several URLs)
//	    pattern: "lock:*"
//	    read_only: true
//	    tls_ca: /etc/ssl/redis-ca.pem
//	    tls_insecure: false
//	    password_env: PROD_REDIS_PASSWORD   # or
//	    password_cmd: pass show redis/prod  # run with sh -c, its first line is the password
//	  orders:
//	    redis: [redis://10.0.1.1:26379, redis://10.0.1.2:26379]   # the sentinels
//	    sentinel_master: orders             # mode sentinel: the master they monitor
//	    sentinel_user: watcher              # the sentinels' own ACL user and password
//	    sentinel_password_env: SENTINEL_PASSWORD
//
// A password is never stored in the file: a `password` field, or a password in a URL, is
// refused. The package only reads and checks the file and fetches the password; connecting
// stays with package connect, which takes the context's fields as a connect.Config.
package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/lockscope/lockscope/connect"
)

// Modes a context may name.
const (
	ModeStandalone  = "standalone"
	ModeCluster     = "cluster"
	ModeRedlock     = "redlock"
	ModeIndependent = "independent"
	// ModeSentinel: the URLs are sentinels (sentinel_master names the master, or the URL is
	// redis+sentinel://hosts/NAME); a context with sentinel_master is one without saying so.
	ModeSentinel = "sentinel"
)

// EnvConfig names another config file than the XDG one.
const EnvConfig = "LOCKSCOPE_CONFIG"

// Context is one named connection.
type Context struct {
	Name        string   `yaml:"-"`
	URLs        []string `yaml:"redis"`
	Mode        string   `yaml:"mode"` // "" is standalone; several URLs need one of the others
	Pattern     string   `yaml:"pattern"`
	ReadOnly    bool     `yaml:"read_only"`
	TLSCA       string   `yaml:"tls_ca"`
	TLSInsecure bool     `yaml:"tls_insecure"`
	PasswordEnv string   `yaml:"password_env"`
	PasswordCmd string   `yaml:"password_cmd"`
	// SentinelMaster, SentinelUser and SentinelPasswordEnv are --sentinel-master,
	// --sentinel-user and the variable that holds the sentinels' password.
	SentinelMaster      string `yaml:"sentinel_master"`
	SentinelUser        string `yaml:"sentinel_user"`
	SentinelPasswordEnv string `yaml:"sentinel_password_env"`
	// Password is only declared to refuse it with a clear message.
	Password string `yaml:"password"`
}

// File is a parsed config file.
type File struct {
	Path     string
	Contexts map[string]Context
}

// Path is where the config file is: $LOCKSCOPE_CONFIG, else $XDG_CONFIG_HOME/lockscope/
// config.yaml, else ~/.config/lockscope/config.yaml.
func Path(getenv func(string) string) (string, error) {
	if p := getenv(EnvConfig); p != "" {
		return p, nil
	}
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home := getenv("HOME")
		if home == "" {
			return "", errors.New("no config directory: set $XDG_CONFIG_HOME or $HOME")
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "lockscope", "config.yaml"), nil
}

// Load reads and checks the config file (a missing file is an empty one).
func Load(getenv func(string) string) (*File, error) {
	path, err := Path(getenv)
	if err != nil {
		return nil, err
	}
	f := &File{Path: path, Contexts: map[string]Context{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, err
	}
	var doc struct {
		Contexts map[string]Context `yaml:"contexts"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for name, c := range doc.Contexts {
		c.Name = name
		if err := c.check(); err != nil {
			return nil, fmt.Errorf("%s: context %s: %w", path, name, err)
		}
		if c.PasswordCmd != "" && worldWritable(path) {
			return nil, fmt.Errorf("%s: context %s: every user may write this file, and lockscope would run its password_cmd: chmod o-w %s", path, name, path)
		}
		f.Contexts[name] = c
	}
	return f, nil
}

// worldWritable reports whether every user may change the file at path. The file holds no
// password, so reading it is harmless; writing it is not when lockscope runs a command it names.
func worldWritable(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().Perm()&0o002 != 0
}

// check refuses a context that stores a password or does not say where to connect.
func (c Context) check() error {
	if c.Password != "" {
		return errors.New("a password in clear is refused: use password_env or password_cmd")
	}
	if c.PasswordEnv != "" && c.PasswordCmd != "" {
		return errors.New("password_env and password_cmd: give one")
	}
	if len(c.URLs) == 0 {
		return errors.New("no redis URL")
	}
	for _, raw := range c.URLs {
		if !strings.Contains(raw, "://") {
			shown := strconv.Quote(raw)
			if strings.Contains(raw, "@") { // it may hold a password
				shown = "a redis entry"
			}
			return fmt.Errorf("%s is no URL: quote a redis+sentinel:// URL of several sentinels "+
				`("redis+sentinel://h1:p1,h2:p2/NAME"): YAML splits [...] at its commas`, shown)
		}
		if u, err := url.Parse(raw); err == nil && u.User != nil {
			if _, has := u.User.Password(); has {
				return errors.New("a password in a redis URL is refused: use password_env or password_cmd")
			}
		}
		// A URL of several sentinels (h1:p1,h2:p2) does not parse: look for its parts, in its
		// authority only (a user in the query, sentinel_username=svc@corp, is no password).
		authority := raw[strings.Index(raw, "://")+3:]
		if end := strings.IndexAny(authority, "/?#"); end >= 0 {
			authority = authority[:end]
		}
		if at := strings.LastIndex(authority, "@"); at >= 0 && strings.Contains(authority[:at], ":") {
			return errors.New("a password in a redis URL is refused: use password_env or password_cmd")
		}
		if strings.Contains(raw, "sentinel_password=") {
			return errors.New("a sentinel password in a redis URL is refused: use sentinel_password_env")
		}
	}
	sentinel := c.namesSentinel()
	if sentinel && c.Mode != "" && c.Mode != ModeSentinel {
		return fmt.Errorf("mode %s with sentinel_master or a redis+sentinel:// URL: a Sentinel deployment is mode %s", c.Mode, ModeSentinel)
	}
	switch c.Mode {
	case ModeSentinel:
		if !sentinel {
			return errors.New("mode sentinel: give sentinel_master (the URLs are the sentinels) or a redis+sentinel://hosts/NAME URL")
		}
	case ModeCluster, ModeIndependent:
	case ModeRedlock:
		if len(c.URLs) < 2 {
			return errors.New("mode redlock takes several redis URLs")
		}
	case "", ModeStandalone:
		if len(c.URLs) != 1 && !sentinel {
			return fmt.Errorf("%d redis URLs: say what they are with mode %s, %s or %s", len(c.URLs),
				ModeRedlock, ModeIndependent, ModeCluster)
		}
	default:
		return fmt.Errorf("mode %q: want %s, %s, %s, %s or %s", c.Mode, ModeStandalone, ModeCluster, ModeRedlock, ModeIndependent, ModeSentinel)
	}
	return nil
}

// Names are the contexts' names, sorted.
func (f *File) Names() []string {
	names := make([]string, 0, len(f.Contexts))
	for name := range f.Contexts {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Get is the context called name.
func (f *File) Get(name string) (Context, error) {
	c, ok := f.Contexts[name]
	if !ok {
		known := "none is defined"
		if len(f.Contexts) > 0 {
			known = "known: " + strings.Join(f.Names(), ", ")
		}
		return Context{}, fmt.Errorf("no context %q in %s (%s)", name, f.Path, known)
	}
	return c, nil
}

// ResolvedMode is the context's mode: sentinel when it names a master or a sentinel URL,
// standalone when it names none.
func (c Context) ResolvedMode() string {
	switch {
	case c.Mode != "":
		return c.Mode
	case c.namesSentinel():
		return ModeSentinel
	}
	return ModeStandalone
}

// namesSentinel: the context is a Sentinel deployment whether or not its mode says so (it
// names a master, or a URL is redis+sentinel://).
func (c Context) namesSentinel() bool {
	return c.SentinelMaster != "" || slices.ContainsFunc(c.URLs, connect.IsSentinelURL)
}

// FetchSentinelPassword is the sentinels' password: the variable sentinel_password_env
// names; "" when the context names none.
func (c Context) FetchSentinelPassword(getenv func(string) string) (string, error) {
	if c.SentinelPasswordEnv == "" {
		return "", nil
	}
	pw := getenv(c.SentinelPasswordEnv)
	if pw == "" {
		return "", fmt.Errorf("context %s: $%s (sentinel_password_env) is empty", c.Name, c.SentinelPasswordEnv)
	}
	return pw, nil
}

// PasswordSource says where the password comes from, for listings ("env PROD_PW", "cmd",
// "-"); it never contains the password.
func (c Context) PasswordSource() string {
	switch {
	case c.PasswordEnv != "":
		return "env " + c.PasswordEnv
	case c.PasswordCmd != "":
		return "cmd"
	}
	return "-"
}

// passwordCmdTimeout bounds password_cmd (a password manager may ask for a touch).
const passwordCmdTimeout = 30 * time.Second

// passwordCmdWaitDelay is how long password_cmd's output may stay open once it is stopped.
const passwordCmdWaitDelay = 500 * time.Millisecond

// FetchPassword is the context's password: the variable password_env names, or the first
// line password_cmd prints; "" when the context has neither.
func (c Context) FetchPassword(ctx context.Context, getenv func(string) string) (string, error) {
	switch {
	case c.PasswordEnv != "":
		pw := getenv(c.PasswordEnv)
		if pw == "" {
			return "", fmt.Errorf("context %s: $%s (password_env) is empty", c.Name, c.PasswordEnv)
		}
		return pw, nil
	case c.PasswordCmd != "":
		ctx, cancel := context.WithTimeout(ctx, passwordCmdTimeout)
		defer cancel()
		var stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, "sh", "-c", c.PasswordCmd)
		cmd.Stderr = &stderr
		// Killing the shell does not kill what it started: a child that keeps the output
		// open would make Output wait for it past the deadline.
		cmd.WaitDelay = passwordCmdWaitDelay
		out, err := cmd.Output()
		if ctx.Err() != nil {
			return "", fmt.Errorf("context %s: password_cmd did not finish in time (%v) %s", c.Name, ctx.Err(), strings.TrimSpace(stderr.String()))
		}
		if err != nil {
			// The command's own words, not its output: that would be the password.
			return "", fmt.Errorf("context %s: password_cmd failed: %v %s", c.Name, err, strings.TrimSpace(stderr.String()))
		}
		pw, _, _ := strings.Cut(string(out), "\n")
		if pw = strings.TrimRight(pw, "\r"); pw == "" {
			return "", fmt.Errorf("context %s: password_cmd printed no password", c.Name)
		}
		return pw, nil
	}
	return "", nil
}
