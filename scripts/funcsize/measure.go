package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// fn is one function as measured.
type fn struct {
	File       string // slash-separated, as the path was given (./ removed)
	Name       string // Func, or Type.Method
	Pos        string // file:line of its func keyword
	Lines      int    // from the func keyword's line to the closing brace's, both counted
	Complexity int
}

// measureAll measures every function in the files the roots name, in the
// order of their files' paths; _test.go files only if tests is set.
func measureAll(roots []string, tests bool) ([]fn, error) {
	files, err := goFiles(roots, tests)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var funcs []fn
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		funcs = append(funcs, measureFile(fset, filepath.ToSlash(path), f)...)
	}
	return funcs, nil
}

// goFiles lists the .go files the roots name, each once, sorted. A file
// named explicitly is measured even if it is a test.
func goFiles(roots []string, tests bool) ([]string, error) {
	seen := map[string]bool{}
	for _, root := range roots {
		recursive := false
		if rest, ok := strings.CutSuffix(root, "/..."); ok {
			root, recursive = rest, true
			if root == "" || root == "." {
				root = "."
			}
		}
		info, err := os.Stat(root)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			seen[filepath.Clean(root)] = true
			continue
		}
		err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != root && (!recursive || skipDir(d.Name())) {
					return filepath.SkipDir
				}
				return nil
			}
			if strings.HasSuffix(path, ".go") && (tests || !strings.HasSuffix(path, "_test.go")) {
				seen[filepath.Clean(path)] = true
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	files := make([]string, 0, len(seen))
	for path := range seen {
		files = append(files, path)
	}
	sort.Strings(files)
	return files, nil
}

// skipDir says whether the go tool's ./... would skip a folder of this name.
func skipDir(name string) bool {
	return name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}

// measureFile measures the declared functions of one file. Function
// literals are measured as part of the declaration that holds them.
func measureFile(fset *token.FileSet, path string, f *ast.File) []fn {
	var funcs []fn
	for _, decl := range f.Decls {
		d, ok := decl.(*ast.FuncDecl)
		if !ok || d.Body == nil {
			continue
		}
		start := fset.Position(d.Pos())
		end := fset.Position(d.End())
		funcs = append(funcs, fn{
			File:       path,
			Name:       funcName(d),
			Pos:        fmt.Sprintf("%s:%d", path, start.Line),
			Lines:      end.Line - start.Line + 1,
			Complexity: complexity(d.Body),
		})
	}
	return funcs
}

// funcName is Func, or Type.Method (without the receiver's type
// parameters or its pointer).
func funcName(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return d.Name.Name
	}
	t := d.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.ParenExpr:
			t = x.X
			continue
		}
		break
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + d.Name.Name
	}
	return d.Name.Name
}

// complexity is gocyclo's count: 1, plus one per decision point.
func complexity(body *ast.BlockStmt) int {
	c := 1
	ast.Inspect(body, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			c++
		case *ast.CaseClause:
			if x.List != nil { // not default
				c++
			}
		case *ast.CommClause:
			if x.Comm != nil { // not default
				c++
			}
		case *ast.BinaryExpr:
			if x.Op == token.LAND || x.Op == token.LOR {
				c++
			}
		}
		return true
	})
	return c
}
