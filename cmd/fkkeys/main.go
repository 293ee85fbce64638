// Command fkkeys makes and edits the token key sets of a deployment: the
// signing set that only the matchmaking service holds (it mints tokens) and
// the public set every other service verifies with. docs/operations.md
// ("Token keys") walks through a rotation with it.
//
// Usage:
//
//	fkkeys new -kid 2026-12 -out signing.json     # a set with one new signing key
//	fkkeys public signing.json > public.json       # the same keys without private parts
//	fkkeys merge a.json b.json > merged.json       # the keys of both; the first private key signs
//	fkkeys show FILE                               # kids, in order, and which can sign
//
// Sets go to standard output unless -out names a file (written mode 0600).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/fourkingdoms/fourkingdoms/pkg/auth"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "fkkeys:", err)
		}
		os.Exit(2)
	}
}

const usage = `usage:
  fkkeys new [-kid ID] [-out FILE]       a set with one new signing key (kid: today's date)
  fkkeys public [-out FILE] SET          the public keys of SET
  fkkeys merge [-out FILE] SET...        the keys of every SET in order; the first private key signs
  fkkeys show SET                        the keys of SET`

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return flag.ErrHelp
	}
	fs := flag.NewFlagSet("fkkeys "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "write the set to this file (mode 0600) instead of standard output")
	kid := fs.String("kid", time.Now().UTC().Format("2006-01-02"), "key id of the new key (new)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	files := fs.Args()
	var ks *auth.KeySet
	var err error
	switch args[0] {
	case "new":
		if len(files) != 0 {
			return fmt.Errorf("new takes no file: %v", files)
		}
		ks, err = auth.GenerateKeySet(*kid)
	case "public":
		if len(files) != 1 {
			return errors.New("public takes one key set file")
		}
		if ks, err = auth.LoadFile(files[0]); err == nil {
			ks = ks.PublicOnly()
		}
	case "merge":
		if len(files) == 0 {
			return errors.New("merge takes one or more key set files")
		}
		sets := make([]*auth.KeySet, len(files))
		for i, f := range files {
			if sets[i], err = auth.LoadFile(f); err != nil {
				return err
			}
		}
		ks, err = auth.Merge(sets...)
	case "show":
		if len(files) != 1 {
			return errors.New("show takes one key set file")
		}
		if ks, err = auth.LoadFile(files[0]); err != nil {
			return err
		}
		return show(stdout, ks)
	default:
		fmt.Fprintln(stderr, usage)
		return fmt.Errorf("unknown command %q", args[0])
	}
	if err != nil {
		return err
	}
	if *out != "" {
		return ks.WriteFile(*out)
	}
	data, err := ks.MarshalJSON()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", data)
	return err
}

// show lists the keys, marking the one that signs.
func show(w io.Writer, ks *auth.KeySet) error {
	signing := ""
	for _, k := range ks.Keys() {
		what := "public"
		if k.Private != nil {
			what = "private"
			if signing == "" {
				signing = k.ID
				what = "private, signs"
			}
		}
		if _, err := fmt.Fprintf(w, "%s\t%s\n", k.ID, what); err != nil {
			return err
		}
	}
	if signing == "" {
		_, err := fmt.Fprintln(w, "(public set: verifies only)")
		return err
	}
	return nil
}
