package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
)

// The command reference in docs/cli is generated from the command tree, one
// Markdown page per visible command, by the hidden `spool docs gen`. A test
// (TestCLIDocsUpToDate) fails when the pages and the tree disagree.

//go:generate go run . docs gen --dir ../../docs/cli

// cliDocsDir is where `spool docs gen` writes, from the repository root.
const cliDocsDir = "docs/cli"

// cliDocsRegenerate is the command that brings docs/cli up to date.
const cliDocsRegenerate = "go run ./cmd/spool docs gen"

// newDocsCmd is the hidden `spool docs gen`.
func newDocsCmd() *cobra.Command {
	docs := &cobra.Command{
		Use:    "docs",
		Short:  "Generate Spool's command reference",
		Hidden: true,
	}
	dir := cliDocsDir
	gen := &cobra.Command{
		Use:   "gen",
		Short: "Write one Markdown page per command into --dir",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := writeCLIDocs(newRootCmd(), dir)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %d pages to %s\n", n, dir)
			return nil
		},
	}
	gen.Flags().StringVar(&dir, "dir", dir, "directory the pages go to; its spool*.md files are replaced")
	docs.AddCommand(gen)
	return docs
}

// writeCLIDocs replaces the spool*.md pages of dir with root's.
func writeCLIDocs(root *cobra.Command, dir string) (int, error) {
	pages := cliDocPages(root)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	old, err := filepath.Glob(filepath.Join(dir, "spool*.md"))
	if err != nil {
		return 0, err
	}
	for _, f := range old {
		if _, keep := pages[filepath.Base(f)]; !keep {
			if err := os.Remove(f); err != nil {
				return 0, err
			}
		}
	}
	for name, text := range pages {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return 0, err
		}
	}
	return len(pages), nil
}

// docCommands is root and every command under it a user sees (not hidden,
// not help), with cobra's completion command added as Execute adds it.
func docCommands(root *cobra.Command) []*cobra.Command {
	root.InitDefaultCompletionCmd()
	root.InitDefaultVersionFlag()
	var out []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		c.InitDefaultHelpFlag()
		out = append(out, c)
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	return out
}

// cliPageName is the file of command c's page: spool_topic_create.md.
func cliPageName(c *cobra.Command) string {
	return strings.ReplaceAll(c.CommandPath(), " ", "_") + ".md"
}

// cliDocPages renders every visible command of root: file name → Markdown.
func cliDocPages(root *cobra.Command) map[string]string {
	pages := map[string]string{}
	for _, c := range docCommands(root) {
		pages[cliPageName(c)] = cliDocPage(c)
	}
	return pages
}

func cliDocPage(c *cobra.Command) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", c.CommandPath())
	fmt.Fprintf(&b, "<!-- Generated from the command's help by `%s`: edit cmd/spool, not this page. -->\n\n", cliDocsRegenerate)
	if c.Short != "" {
		fmt.Fprintf(&b, "%s.\n\n", strings.TrimSuffix(c.Short, "."))
	}
	if long := strings.TrimSpace(c.Long); long != "" {
		fmt.Fprintf(&b, "```text\n%s\n```\n\n", long)
	}
	if !c.HasParent() {
		b.WriteString("Every flag has a `SPOOL_*` environment equivalent: the flag's name upper-cased, dashes as underscores (`--data-dir` is `SPOOL_DATA_DIR`). A flag given on the command line wins.\n\n")
	}
	if c.Runnable() {
		fmt.Fprintf(&b, "## Usage\n\n```text\n%s\n```\n\n", c.UseLine())
	}
	if ex := c.Example; strings.TrimSpace(ex) != "" {
		fmt.Fprintf(&b, "## Examples\n\n```sh\n%s\n```\n\n", dedent(ex))
	}
	if fs := c.NonInheritedFlags(); fs.HasAvailableFlags() {
		fmt.Fprintf(&b, "## Flags\n\n```text\n%s```\n\n", fs.FlagUsagesWrapped(0))
	}
	if fs := c.InheritedFlags(); fs.HasAvailableFlags() {
		fmt.Fprintf(&b, "## Global flags\n\n```text\n%s```\n\n", fs.FlagUsagesWrapped(0))
	}
	var subs []*cobra.Command
	for _, s := range c.Commands() {
		if !s.Hidden && s.Name() != "help" {
			subs = append(subs, s)
		}
	}
	sort.Slice(subs, func(i, j int) bool { return subs[i].Name() < subs[j].Name() })
	if len(subs) > 0 {
		b.WriteString("## Commands\n\n")
		for _, s := range subs {
			fmt.Fprintf(&b, "- [%s](%s): %s\n", s.CommandPath(), cliPageName(s), s.Short)
		}
		b.WriteString("\n")
	}
	if p := c.Parent(); p != nil {
		fmt.Fprintf(&b, "## See also\n\n- [%s](%s): %s\n", p.CommandPath(), cliPageName(p), p.Short)
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// dedent removes the indentation every non-blank line of s shares.
func dedent(s string) string {
	lines := strings.Split(strings.Trim(s, "\n"), "\n")
	indent := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " \t"))
		if indent < 0 || n < indent {
			indent = n
		}
	}
	for i, l := range lines {
		if len(l) >= indent && indent > 0 {
			lines[i] = l[indent:]
		}
	}
	return strings.Join(lines, "\n")
}
