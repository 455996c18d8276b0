package cli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestTextOutputGoesThroughPrintf keeps printf the one way the CLI writes text: a direct
// fmt.Fprint, a cobra cmd.Print, a Write or io.WriteString elsewhere in the package could
// print text from Redis unescaped. (JSON goes through encoding/json, which escapes control
// characters itself.)
func TestTextOutputGoesThroughPrintf(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "output.go" {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			name := sel.Sel.Name
			writes := strings.HasPrefix(name, "Print") || strings.HasPrefix(name, "Fprint") || strings.HasPrefix(name, "Write")
			if writes && !allowedWriters[exprName(sel.X)+"."+name] {
				t.Errorf("%s: %s.%s writes text past printf (cli/output.go)", fset.Position(call.Pos()), exprName(sel.X), sel.Sel.Name)
			}
			return true
		})
	}
}

// allowedWriters write text that is not read from Redis: the demo's own summary of its run
// (one, or with --compare both runs').
var allowedWriters = map[string]bool{"result.WriteJSON": true, "result.WriteText": true}

func exprName(e ast.Expr) string {
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return "…"
}
