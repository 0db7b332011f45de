package mcp

import (
	"bufio"
	"go/build/constraint"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevisionFilesCarryTheirBuildTag pins the file layout of the packages
// the build tag keel_omit2025 covers: a file is left out by the tag
// exactly when its name starts with rev2025_ (the 2025 rules and their
// tests), no other file's name contains rev2025_, and the files that
// stand in for them when the tag is set are the rev2025_omitted* files.
func TestRevisionFilesCarryTheirBuildTag(t *testing.T) {
	without := map[string]bool{"keel_omit2025": false}
	with := map[string]bool{"keel_omit2025": true}
	for _, dir := range []string{".", "../transport", "../transport/streamhttp", "../middleware", "../registry"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		require.NoError(t, err)
		for _, f := range files {
			name := filepath.Base(f)
			expr := buildConstraint(t, f)
			in := func(tags map[string]bool) bool {
				return expr == nil || expr.Eval(func(tag string) bool { return tags[tag] })
			}
			switch {
			case strings.HasPrefix(name, "rev2025_omitted"):
				assert.True(t, in(with) && !in(without), "%s stands in for the 2025 rules: only with keel_omit2025", f)
			case strings.HasPrefix(name, "rev2025_"):
				assert.True(t, in(without) && !in(with), "%s holds 2025 rules: left out by keel_omit2025", f)
			case strings.Contains(name, "rev2025_"):
				assert.Fail(t, "a file whose name says rev2025_ holds 2025 rules: it starts with rev2025_ and is left out by keel_omit2025", f)
			default:
				assert.True(t, in(without) && in(with), "%s is shared by both builds (a file only one build compiles starts with rev2025_)", f)
			}
		}
	}
}

// buildConstraint returns the //go:build expression of file f when it
// names keel_omit2025, else nil.
func buildConstraint(t *testing.T, f string) constraint.Expr {
	t.Helper()
	fh, err := os.Open(f)
	require.NoError(t, err)
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "package ") {
			return nil
		}
		if constraint.IsGoBuild(line) {
			if !strings.Contains(line, "keel_omit2025") {
				return nil // another constraint (GOOS, race): the same in both builds
			}
			expr, err := constraint.Parse(line)
			require.NoError(t, err, f)
			return expr
		}
	}
	require.NoError(t, sc.Err())
	return nil
}
