package docs

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the Go snippets in README.md and docs/ from the examples they name")

// moduleRoot is the module's directory, seen from this package's.
const moduleRoot = "../.."

// snippetMarker names the example a ```go block in the docs is generated from: the package's
// directory in the module, a dot and the Example function, e.g. "scanner.ExampleNew" or
// "locklib/protocol.ExampleParseValue". It stands on the line before the block.
var snippetMarker = regexp.MustCompile(`^<!-- example: ([\w./-]+\.Example\w*) -->$`)

// Every Go snippet in the README and docs/ is the body of a runnable example, without its
// "// setup" lines and its output comment, so that what a user copies compiles and has run.
// go test ./internal/docs -update-docs rewrites the snippets from the examples.
func TestDocSnippetsAreExamples(t *testing.T) {
	examples := exampleBodies(t)
	checked := 0
	for _, doc := range markdownFiles(t) {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		updated, blocks, problems := checkSnippets(string(text), examples)
		checked += blocks
		for _, p := range problems {
			t.Errorf("%s: %s", doc, p)
		}
		if *updateDocs && updated != string(text) {
			if err := os.WriteFile(doc, []byte(updated), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: snippets rewritten from the examples", doc)
		}
	}
	if checked == 0 {
		t.Fatal("no Go block found in README.md or docs/: the check checks nothing")
	}
}

// markdownFiles are README.md and every .md file under docs/.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	files := []string{filepath.Join(moduleRoot, "README.md")}
	err := filepath.WalkDir(filepath.Join(moduleRoot, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// goFence opens a Go block in any of markdown's spellings: ```go, ~~~go, ```golang, ```Go {.x}.
var goFence = regexp.MustCompile(`(?i)^(` + "```" + `|~~~)\s*go(lang)?\b`)

// checkSnippets compares every ```go block of a markdown text with the example its marker
// names; it returns the text with every marked block replaced by its example, and how many
// Go blocks it found.
func checkSnippets(text string, examples map[string]string) (updated string, blocks int, problems []string) {
	lines := strings.Split(text, "\n")
	var out []string
	for i := 0; i < len(lines); i++ {
		fence := goFence.FindString(strings.TrimSpace(lines[i]))
		if fence == "" {
			out = append(out, lines[i])
			continue
		}
		end := i + 1
		for end < len(lines) && strings.TrimSpace(lines[end]) != fence[:3] {
			end++
		}
		blocks++
		block := strings.Join(lines[i+1:end], "\n")
		out = append(out, lines[i])
		var m []string
		if i > 0 {
			m = snippetMarker.FindStringSubmatch(strings.TrimSpace(lines[i-1]))
		}
		want, ok := "", false
		if m != nil {
			want, ok = examples[m[1]]
		}
		switch {
		case m == nil:
			problems = append(problems, fmt.Sprintf("line %d: a ```go block without an <!-- example: dir.ExampleName --> line before it", i+1))
		case !ok:
			problems = append(problems, fmt.Sprintf("line %d: no example %s in the module", i+1, m[1]))
		case block != want:
			problems = append(problems, fmt.Sprintf("line %d: the snippet differs from %s (run with -update-docs):\n--- snippet\n%s\n--- example\n%s",
				i+1, m[1], block, want))
		}
		if ok {
			block = want
		}
		if end < len(lines) {
			out = append(out, block, lines[end])
		} else {
			out = append(out, block) // unclosed block: left as it was
		}
		i = end
	}
	return strings.Join(out, "\n"), blocks, problems
}

// exampleBodies maps "dir.ExampleName" to the body of every Example function in the
// repository's test files, nested modules included (locklib/extra/lockprom's examples are
// in docs/locklib.md), as the docs show it.
func exampleBodies(t *testing.T) map[string]string {
	t.Helper()
	bodies := map[string]string{}
	err := filepath.WalkDir(moduleRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p == moduleRoot {
				return nil
			}
			name := d.Name()
			if strings.HasPrefix(name, ".") || name == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		dir, err := filepath.Rel(moduleRoot, filepath.Dir(p))
		if err != nil {
			return err
		}
		for name, body := range fileExamples(t, p) {
			key := filepath.ToSlash(dir) + "." + name
			if _, dup := bodies[key]; dup {
				t.Errorf("%s: a second %s in %s", p, name, dir)
			}
			bodies[key] = body
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return bodies
}

// fileExamples maps each Example function of file to its body as the docs show it: one tab
// of indentation less, without "// setup" lines, the output comment and blank lines at
// either end.
func fileExamples(t *testing.T, file string) map[string]string {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	bodies := map[string]string{}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Example") || fn.Body == nil {
			continue
		}
		body := string(src[fset.Position(fn.Body.Lbrace).Offset+1 : fset.Position(fn.Body.Rbrace).Offset])
		var lines []string
		runs := false // go test runs an example only when it has an output comment
		for _, line := range strings.Split(body, "\n") {
			trimmed := strings.TrimSpace(line)
			if strings.HasPrefix(trimmed, "// Output:") || strings.HasPrefix(trimmed, "// Unordered output:") {
				runs = true
				break
			}
			if strings.Contains(line, "// setup") {
				continue
			}
			lines = append(lines, strings.TrimPrefix(line, "\t"))
		}
		if !runs {
			t.Errorf("%s: %s has no // Output: comment, so go test compiles it but never runs it", file, fn.Name.Name)
		}
		bodies[fn.Name.Name] = strings.Trim(strings.Join(lines, "\n"), "\n")
	}
	return bodies
}
