package main

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Tests that keep the README, docs/ and the generated command reference
// true to the command tree.

// repoRoot is the repository's root seen from this package's directory.
const repoRoot = "../.."

// TestCLIDocsUpToDate: docs/cli holds exactly the pages `spool docs gen`
// writes today.
func TestCLIDocsUpToDate(t *testing.T) {
	if diff := cliDocsDiff(newRootCmd(), filepath.Join(repoRoot, cliDocsDir)); len(diff) > 0 {
		t.Fatalf("docs/cli is out of date; run `%s` from the repository root (or `go generate ./cmd/spool`):\n%s",
			cliDocsRegenerate, strings.Join(diff, "\n"))
	}
}

// A renamed flag, a new command and a removed one each show as a
// difference from the committed pages.
func TestCLIDocsDiffNoticesChanges(t *testing.T) {
	dir := filepath.Join(repoRoot, cliDocsDir)
	for _, c := range []struct {
		name   string
		change func(root *cobra.Command)
		page   string
	}{
		{"renamed flag", func(root *cobra.Command) {
			cmd, _, err := root.Find([]string{"topic", "create"})
			if err != nil {
				t.Fatal(err)
			}
			cmd.Flags().Lookup("partitions").Name = "partition-count"
		}, "spool_topic_create.md: differs"},
		{"new command", func(root *cobra.Command) {
			root.AddCommand(&cobra.Command{Use: "frobnicate", Short: "Frobnicate", Run: func(*cobra.Command, []string) {}})
		}, "spool_frobnicate.md: missing"},
		{"removed command", func(root *cobra.Command) {
			cmd, _, err := root.Find([]string{"scrub"})
			if err != nil {
				t.Fatal(err)
			}
			root.RemoveCommand(cmd)
		}, "spool_scrub.md: no such command"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := newRootCmd()
			c.change(root)
			diff := cliDocsDiff(root, dir)
			if !slices.ContainsFunc(diff, func(d string) bool { return strings.HasPrefix(d, c.page) }) {
				t.Fatalf("diff %q does not report %q", diff, c.page)
			}
		})
	}
}

// cliDocsDiff lists how the spool*.md pages of dir differ from root's.
func cliDocsDiff(root *cobra.Command, dir string) []string {
	pages := cliDocPages(root)
	var diff []string
	for name, want := range pages {
		got, err := os.ReadFile(filepath.Join(dir, name))
		switch {
		case err != nil:
			diff = append(diff, name+": missing")
		case string(got) != want:
			diff = append(diff, name+": differs"+firstDifference(string(got), want))
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "spool*.md"))
	for _, f := range files {
		if _, ok := pages[filepath.Base(f)]; !ok {
			diff = append(diff, filepath.Base(f)+": no such command")
		}
	}
	sort.Strings(diff)
	return diff
}

// firstDifference shows the first line where got and want part.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf(" at line %d:\n  committed: %s\n  generated: %s", i+1, gl, wl)
		}
	}
	return ""
}

// markdownFiles is README.md, CHANGELOG.md and every .md under docs/.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	files := []string{filepath.Join(repoRoot, "README.md"), filepath.Join(repoRoot, "CHANGELOG.md")}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			t.Fatal(err)
		}
	}
	return files
}

// shellLine is one command line of a shell code block.
type shellLine struct {
	where string // file:line
	text  string
}

// shellFence opens a shell code block.
var shellFence = regexp.MustCompile("^\\s*```+\\s*(sh|bash|shell|console|zsh)\\s*$")

// shellLines reads the lines of the shell code blocks of a Markdown text,
// with backslash continuations joined.
func shellLines(name, text string) []shellLine {
	var out []shellLine
	in := false
	var cur *shellLine
	for i, l := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(l)
		if !in {
			in = shellFence.MatchString(l)
			continue
		}
		if strings.HasPrefix(trimmed, "```") {
			in, cur = false, nil
			continue
		}
		if cur != nil {
			cur.text += " " + strings.TrimSuffix(trimmed, "\\")
		} else {
			out = append(out, shellLine{fmt.Sprintf("%s:%d", name, i+1), strings.TrimSuffix(trimmed, "\\")})
			cur = &out[len(out)-1]
		}
		if !strings.HasSuffix(trimmed, "\\") {
			cur = nil
		}
	}
	return out
}

// shellWords splits a command line into simple commands, each a list of
// words: quotes are removed, `|`, `||`, `&&`, `&`, `;`, `(`, `)`, `$(` and
// backquotes separate commands, redirections and comments are dropped.
func shellWords(line string) [][]string {
	var cmds [][]string
	var words []string
	var w strings.Builder
	inWord := false
	endWord := func() {
		if inWord {
			words = append(words, w.String())
		}
		w.Reset()
		inWord = false
	}
	endCmd := func() {
		endWord()
		if len(words) > 0 {
			cmds = append(cmds, words)
		}
		words = nil
	}
scan:
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case ch == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				j = len(line) - i - 1
			}
			w.WriteString(line[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case ch == '"':
			j := i + 1
			for j < len(line) && line[j] != '"' {
				if line[j] == '\\' && j+1 < len(line) {
					j++
				}
				j++
			}
			w.WriteString(line[i+1 : min(j, len(line))])
			inWord = true
			i = j
		case ch == '\\' && i+1 < len(line):
			w.WriteByte(line[i+1])
			inWord = true
			i++
		case ch == '#' && !inWord:
			break scan
		case ch == '$' && i+1 < len(line) && line[i+1] == '(':
			endCmd()
			i++
		case strings.IndexByte("|&;()`", ch) >= 0:
			endCmd()
		case ch == ' ' || ch == '\t':
			endWord()
		default:
			w.WriteByte(ch)
			inWord = true
		}
	}
	endCmd()
	// Redirections: `>f`, `2>/dev/null`, `> f`, `< f`.
	redirect := regexp.MustCompile(`^[0-9]*(>>?|<)(&[0-9]+)?(.*)$`)
	for k, c := range cmds {
		var kept []string
		for i := 0; i < len(c); i++ {
			if m := redirect.FindStringSubmatch(c[i]); m != nil {
				if m[3] == "" && m[2] == "" {
					i++ // the target is the next word
				}
				continue
			}
			kept = append(kept, c[i])
		}
		cmds[k] = kept
	}
	return cmds
}

// spoolArgs is the arguments given to spool by a simple command, if it runs
// spool: `spool ...`, `./spool ...`, `go run ./cmd/spool ...`,
// `nix run . -- ...`, after any VAR=value words and shell keywords.
func spoolArgs(words []string) ([]string, bool) {
	for len(words) > 0 && (strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") ||
		slices.Contains([]string{"until", "while", "if", "then", "do", "!", "time", "exec", "sudo", "["}, words[0])) {
		words = words[1:]
	}
	switch {
	case len(words) == 0:
		return nil, false
	case words[0] == "spool" || strings.HasSuffix(words[0], "/spool"):
		return words[1:], true
	case len(words) >= 3 && words[0] == "go" && words[1] == "run" && strings.TrimSuffix(words[2], "/") == "./cmd/spool":
		return words[3:], true
	case len(words) >= 3 && words[0] == "nix" && words[1] == "run":
		if i := slices.Index(words, "--"); i > 0 {
			return words[i+1:], true
		}
	}
	return nil, false
}

// checkSpoolArgs finds the command args name in a fresh command tree and
// parses its flags, as running it would, without running it.
func checkSpoolArgs(args []string) error {
	root := newRootCmd()
	root.InitDefaultCompletionCmd()
	root.InitDefaultHelpCmd()
	cmd, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	if cmd.DisableFlagParsing {
		return nil
	}
	if err := cmd.ParseFlags(rest); errors.Is(err, pflag.ErrHelp) {
		return nil
	} else if err != nil {
		return fmt.Errorf("%s: %w", cmd.CommandPath(), err)
	}
	if help, _ := cmd.Flags().GetBool("help"); help {
		return nil
	}
	pos := cmd.Flags().Args()
	if cmd.HasAvailableSubCommands() && len(pos) > 0 {
		return fmt.Errorf("%s has no command %q", cmd.CommandPath(), pos[0])
	}
	if !cmd.Runnable() && len(pos) == 0 && cmd.HasParent() {
		return nil // a group alone prints its help
	}
	if err := cmd.ValidateArgs(pos); err != nil {
		return fmt.Errorf("%s: %w", cmd.CommandPath(), err)
	}
	return nil
}

// checkShellLine checks every spool command of one shell line; it returns
// how many there were.
func checkShellLine(line string) (int, error) {
	n := 0
	for _, words := range shellWords(line) {
		args, ok := spoolArgs(words)
		if !ok {
			continue
		}
		n++
		if err := checkSpoolArgs(args); err != nil {
			return n, err
		}
	}
	return n, nil
}

// TestDocsCommandsParse: every spool command line in the shell blocks of
// the README and docs/ names a command that exists, with flags that parse
// and as many arguments as it takes.
func TestDocsCommandsParse(t *testing.T) {
	total := 0
	for _, f := range markdownFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, f)
		for _, l := range shellLines(rel, string(b)) {
			n, err := checkShellLine(l.text)
			total += n
			if err != nil {
				t.Errorf("%s: %s\n  %v", l.where, l.text, err)
			}
		}
	}
	// The README alone has more than this; fewer means the reader broke.
	if total < 40 {
		t.Fatalf("only %d spool command lines found in the docs' shell blocks", total)
	}
	t.Logf("%d spool command lines checked", total)
}

func TestCheckShellLine(t *testing.T) {
	for _, c := range []struct {
		line  string
		cmds  int
		wrong string // a part of the error, "" for none
	}{
		{"go run ./cmd/spool node", 1, ""},
		{"go run ./cmd/spool node --data-dir d1 --node-id 2 --join 127.0.0.1:8046 &", 1, ""},
		{"go run ./cmd/spool node --data-dri d1", 1, "unknown flag: --data-dri"},
		{"spool topic create orders --partitions 3 -r 3", 1, ""},
		{"spool topic create orders --partitons 3", 1, "unknown flag: --partitons"},
		{"spool topic create orders --partitions three", 1, "invalid argument"},
		{"spool topic craete orders", 1, `has no command "craete"`},
		{"spool topc list", 1, "unknown command"},
		{"spool decommission", 1, "accepts 1 arg"},
		{"./spool members --watch", 1, ""},
		{"./spool members --wacth", 1, "unknown flag: --wacth"},
		{"printf 'a\\nb\\n' | ./spool produce events   # two records", 1, ""},
		{"SPOOL_ADMIN_TOKEN=$(cat token) spool decommission 3 --admin node1:9644", 1, ""},
		{"SPOOL_ADMIN_TOKEN=$(cat token) spool decommission 3 --admn node1:9644", 1, "unknown flag: --admn"},
		{"until [ $(./spool members 2>/dev/null | grep -c ' alive ') = 3 ]; do sleep 0.2; done", 1, ""},
		{"until [ $(./spool membres 2>/dev/null | grep -c ' alive ') = 3 ]; do sleep 0.2; done", 1, "unknown command"},
		{"nix run . -- topic create demo --partitions 3", 1, ""},
		{"nix run . -- topic create demo --partition 3", 1, "unknown flag"},
		{"spool node --help", 1, ""},
		{"printf '%s\\n' \"$PW\" | spool user hash alice > users    # a comment", 1, ""},
		{"until [ $(./spool members 2>/dev/null | grep -c ' alive ') = 3 ]; do sleep 0.2; done   # a comment", 1, ""},
		{"spool user hash alice bob > users    # a comment", 1, "accepts 1 arg"},
		{"spool completion bash > /etc/bash_completion.d/spool", 1, ""},
		{"kcat -b 127.0.0.1:9092 -L", 0, ""},
		{"echo spool --no-such-flag", 0, ""},
		{"go build -o spool ./cmd/spool", 0, ""},
	} {
		n, err := checkShellLine(c.line)
		switch {
		case n != c.cmds:
			t.Errorf("%s: %d spool commands found, want %d", c.line, n, c.cmds)
		case c.wrong == "" && err != nil:
			t.Errorf("%s: %v", c.line, err)
		case c.wrong != "" && (err == nil || !strings.Contains(err.Error(), c.wrong)):
			t.Errorf("%s: error %v, want one saying %q", c.line, err, c.wrong)
		}
	}
}

// madeHow is how the project was made, which user-facing text does not
// speak of: "issue 13", "session 10", "(session 6)", "PR #4".
var madeHow = regexp.MustCompile(`(?i)\b(issue|session|PR|ticket)s?\s*#?[0-9]+\b`)

func TestMadeHowPattern(t *testing.T) {
	for s, want := range map[string]bool{
		"Before and after issue 13 (the house)": true,
		"(session 10)":                          true,
		"sessions 6":                            true,
		"PR #4":                                 true,
		"--sasl-session-lifetime 1h":            false,
		"session 2s":                            false,
		"a SASL session lifetime of 10 minutes": false,
		"version 0.1.0":                         false,
	} {
		if got := madeHow.MatchString(s); got != want {
			t.Errorf("%q: %v, want %v", s, got, want)
		}
	}
}

// TestDocsSpeakOfTheProduct: the README, the changelog, docs/, the
// commands' help and every string a non-test Go file holds (log messages,
// errors) speak of Spool and its versions, not of how it was made. Code
// comments may.
func TestDocsSpeakOfTheProduct(t *testing.T) {
	for _, f := range markdownFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(string(b), "\n") {
			if m := madeHow.FindString(l); m != "" {
				t.Errorf("%s:%d: %q: say what the product does, not how it was made", f, i+1, m)
			}
		}
	}
	for _, c := range docCommands(newRootCmd()) {
		text := c.Short + "\n" + c.Long + "\n" + c.Example + "\n" + c.Flags().FlagUsages()
		if m := madeHow.FindString(text); m != "" {
			t.Errorf("help of %s: %q", c.CommandPath(), m)
		}
	}
	goFiles := 0
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && p != repoRoot || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		goFiles++
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				s, err := strconv.Unquote(lit.Value)
				if err == nil && madeHow.MatchString(s) {
					t.Errorf("%s: string %q: say what the product does, not how it was made", p, madeHow.FindString(s))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if goFiles < 100 {
		t.Fatalf("only %d Go files read", goFiles)
	}
}

// TestREADMEIsShort: the README stays a two-minute read, and its first
// screen holds the two commands a newcomer needs, exactly as CI runs them.
func TestREADMEIsShort(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 200 {
		t.Errorf("README.md has %d lines; keep it under 200 and move detail into docs/", len(lines))
	}
	const screen = 24
	first := map[string]bool{}
	for _, l := range shellLines("README.md", strings.Join(lines[:min(screen, len(lines))], "\n")) {
		command, _, _ := strings.Cut(l.text, "#")
		first[strings.Join(strings.Fields(command), " ")] = true
	}
	for _, want := range []string{"go run ./cmd/spool node", "scripts/test"} {
		if !first[want] {
			t.Errorf("the README's first %d lines have no shell line %q (commands there: %v)", screen, want, first)
		}
	}
}

// markdownLink is a Markdown link's target.
var markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// headingAnchor is the anchor GitHub gives a heading.
func headingAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestDocsLinks: every relative link of the README and docs/ names a file
// that exists and, with #anchor, a heading of it.
func TestDocsLinks(t *testing.T) {
	anchors := func(file string) map[string]bool {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil
		}
		out := map[string]bool{}
		for _, l := range strings.Split(string(b), "\n") {
			if h, ok := strings.CutPrefix(strings.TrimLeft(l, "#"), " "); ok && strings.HasPrefix(l, "#") {
				out[headingAnchor(strings.ReplaceAll(h, "`", ""))] = true
			}
		}
		return out
	}
	links := 0
	for _, f := range markdownFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range markdownLink.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links++
			path, anchor, _ := strings.Cut(target, "#")
			file := f
			if path != "" {
				file = filepath.Join(filepath.Dir(f), path)
				if _, err := os.Stat(file); err != nil {
					t.Errorf("%s: link to %s: %v", f, target, err)
					continue
				}
			}
			if anchor != "" && !anchors(file)[anchor] {
				t.Errorf("%s: link to %s: no such heading in %s", f, target, file)
			}
		}
	}
	if links < 50 {
		t.Fatalf("only %d links found", links)
	}
}

func TestHeadingAnchor(t *testing.T) {
	for h, want := range map[string]string{
		"Where one acks=all record's time goes": "where-one-acksall-records-time-goes",
		"10,000 partitions":                     "10000-partitions",
		"What CI checks, and what it cannot":    "what-ci-checks-and-what-it-cannot",
		"Fetch under TLS":                       "fetch-under-tls",
	} {
		if got := headingAnchor(h); got != want {
			t.Errorf("%q: %q, want %q", h, got, want)
		}
	}
}

// goTestSpan is a `go test ...` command quoted in prose.
var goTestSpan = regexp.MustCompile("`((?:[A-Z_]+=\\S+ )*go test [^`]+)`")

// testFuncs is the Test, Benchmark and Fuzz functions of a package dir.
func testFuncs(t *testing.T, dir string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
	decl := regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz)\w*)\(`)
	var names []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
			names = append(names, m[1])
		}
	}
	return names
}

// checkGoTest checks a `go test` command's words: every ./package exists,
// and every alternative of its -run and -bench patterns names a test or
// benchmark of those packages.
func checkGoTest(t *testing.T, words []string) error {
	var pkgs, patterns []string
	valued := map[string]bool{"-run": true, "-bench": true, "-benchtime": true, "-count": true, "-timeout": true, "-cpu": true, "-tags": true, "-fuzz": true, "-fuzztime": true}
	for i := 2; i < len(words); i++ {
		w := words[i]
		name, value, inline := strings.Cut(w, "=")
		switch {
		case strings.HasPrefix(w, "./"):
			pkgs = append(pkgs, w)
		case valued[name] && !inline && i+1 < len(words):
			value = words[i+1]
			i++
			fallthrough
		case valued[name]:
			if name == "-run" || name == "-bench" {
				patterns = append(patterns, value)
			}
		}
	}
	if len(pkgs) == 0 {
		return fmt.Errorf("names no package")
	}
	var funcs []string
	for _, p := range pkgs {
		if strings.HasSuffix(p, "/...") {
			return nil // a whole tree: nothing to check by name
		}
		dir := filepath.Join(repoRoot, p)
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return fmt.Errorf("no package %s", p)
		}
		funcs = append(funcs, testFuncs(t, dir)...)
	}
	for _, pat := range patterns {
		for _, alt := range strings.Split(pat, "|") {
			if alt == "^$" || alt == "." || alt == "" {
				continue
			}
			re, err := regexp.Compile(alt)
			if err != nil {
				return fmt.Errorf("pattern %q: %v", alt, err)
			}
			if !slices.ContainsFunc(funcs, re.MatchString) {
				return fmt.Errorf("no test or benchmark of %s matches %q", strings.Join(pkgs, " "), alt)
			}
		}
	}
	return nil
}

// goTestCommands is every `go test` command of a Markdown text: in shell
// blocks and quoted in prose.
func goTestCommands(name, text string) []shellLine {
	out := shellLines(name, text)
	for i, l := range strings.Split(text, "\n") {
		for _, m := range goTestSpan.FindAllStringSubmatch(l, -1) {
			out = append(out, shellLine{fmt.Sprintf("%s:%d", name, i+1), m[1]})
		}
	}
	return out
}

// TestDocsGoTestCommands: the `go test` commands the docs give to
// reproduce a figure or run a test name packages and tests that exist.
func TestDocsGoTestCommands(t *testing.T) {
	checked := 0
	for _, f := range markdownFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, f)
		for _, l := range goTestCommands(rel, string(b)) {
			for _, words := range shellWords(l.text) {
				for len(words) > 0 && strings.Contains(words[0], "=") {
					words = words[1:]
				}
				if len(words) < 2 || words[0] != "go" || words[1] != "test" {
					continue
				}
				checked++
				if err := checkGoTest(t, words); err != nil {
					t.Errorf("%s: %s\n  %v", l.where, l.text, err)
				}
			}
		}
	}
	if checked < 30 {
		t.Fatalf("only %d go test commands found", checked)
	}
	t.Logf("%d go test commands checked", checked)
}

func TestCheckGoTest(t *testing.T) {
	for _, c := range []struct {
		line, wrong string
	}{
		{"go test ./cmd/spool -run TestAlertRules", ""},
		{"go test ./cmd/spool/ -run 'TestAlertRules|TestDocsLinks' -v", ""},
		{"go test -run='^$' -bench=FetchLoopback -benchtime=3s -count=2 ./wire/", ""},
		{"go test ./cmd/spool -run TestAlertRulez", `matches "TestAlertRulez"`},
		{"go test ./cmd/spool -run 'TestAlertRules|TestNoSuch'", `matches "TestNoSuch"`},
		{"go test ./no/such/package -run TestX", "no package ./no/such/package"},
		{"go test ./integration -run '^$' -bench BenchmarkNoSuch -benchtime 1x", `matches "BenchmarkNoSuch"`},
	} {
		err := checkGoTest(t, shellWords(c.line)[0])
		switch {
		case c.wrong == "" && err != nil:
			t.Errorf("%s: %v", c.line, err)
		case c.wrong != "" && (err == nil || !strings.Contains(err.Error(), c.wrong)):
			t.Errorf("%s: error %v, want one saying %q", c.line, err, c.wrong)
		}
	}
}

// TestDocsEnvironmentNames: every SPOOL_* variable the docs name is a
// flag's environment equivalent or one the code or scripts read.
func TestDocsEnvironmentNames(t *testing.T) {
	word := regexp.MustCompile(`\bSPOOL_[A-Z0-9_]*[A-Z0-9]\b`)
	known := map[string]bool{}
	for _, c := range docCommands(newRootCmd()) {
		c.Flags().VisitAll(func(f *pflag.Flag) { known[envName(f.Name)] = true })
	}
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && p != repoRoot || d.Name() == "node_modules" || d.Name() == "docs") {
			return filepath.SkipDir
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".go") || strings.HasSuffix(p, ".sh") || strings.HasSuffix(p, ".nix") || filepath.Base(filepath.Dir(p)) == "scripts") {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, w := range word.FindAllString(string(b), -1) {
				known[w] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !known["SPOOL_DATA_DIR"] || !known["SPOOL_BENCH_FAILOVERS"] {
		t.Fatalf("the known names were not read: %d", len(known))
	}
	checked := 0
	for _, f := range markdownFiles(t) {
		if strings.Contains(f, string(filepath.Separator)+"cli"+string(filepath.Separator)) {
			continue // generated from the flags themselves
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(string(b), "\n") {
			for _, w := range word.FindAllString(l, -1) {
				checked++
				if !known[w] {
					t.Errorf("%s:%d: %s is no flag's variable and nothing reads it", f, i+1, w)
				}
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d SPOOL_ names found in the docs", checked)
	}
}

// foreignFlags are flags the docs give to other tools (nix, docker,
// kafka-configs.sh).
var foreignFlags = map[string]bool{"override-input": true, "extra-experimental-features": true, "name": true, "entity-type": true}

// TestDocsFlagNames: every --flag the README and docs/ name, in prose as in
// code, is a flag of some spool command (or of a tool in foreignFlags), so
// a renamed flag cannot linger in the text.
func TestDocsFlagNames(t *testing.T) {
	known := map[string]bool{}
	for _, c := range docCommands(newRootCmd()) {
		c.Flags().VisitAll(func(f *pflag.Flag) { known[f.Name] = true })
		c.InheritedFlags().VisitAll(func(f *pflag.Flag) { known[f.Name] = true })
	}
	flag := regexp.MustCompile("(?:^|[\\s(`\\[|])--([a-z][a-z0-9*-]*)")
	checked := 0
	for _, f := range markdownFiles(t) {
		if strings.Contains(f, string(filepath.Separator)+"cli"+string(filepath.Separator)) {
			continue // generated from the flags themselves
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "kcat ") {
				continue // kcat's own options
			}
			for _, m := range flag.FindAllStringSubmatch(l, -1) {
				if strings.Contains(m[1], "*") {
					continue // a family: --tls-*, --advertise-*-addr
				}
				checked++
				if !known[m[1]] && !foreignFlags[m[1]] {
					t.Errorf("%s:%d: --%s is no flag of a spool command", f, i+1, m[1])
				}
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d flags found in the docs", checked)
	}
	t.Logf("%d flag names checked", checked)
}
