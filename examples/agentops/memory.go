package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
)

// maxValueBytes bounds a memory value: its compact JSON encoding, at most
// 100 KB.
const maxValueBytes = 100 * 1024

// defaultNamespace is the namespace of entries stored without one.
const defaultNamespace = "default"

// MemoryStoreInput is memory_store's input.
type MemoryStoreInput struct {
	Key       string         `json:"key" jsonschema:"minLength=1,maxLength=256,description=The key to store the value under"`
	Value     jsontext.Value `json:"value" jsonschema:"type=object,description=The value to store (a JSON object of at most 100 KB)"`
	Namespace string         `json:"namespace,omitempty" jsonschema:"maxLength=128,description=Namespace of the key (default: default)"`
}

// MemoryStoreOutput is memory_store's result.
type MemoryStoreOutput struct {
	Success   bool   `json:"success"`
	Key       string `json:"key"`
	Namespace string `json:"namespace"`
	Size      int    `json:"size" jsonschema:"minimum=0"`
	StoredAt  string `json:"storedAt"`
	Message   string `json:"message"`
}

// MemoryKeyInput is the input of memory_retrieve and memory_delete.
type MemoryKeyInput struct {
	Key       string `json:"key" jsonschema:"minLength=1,maxLength=256,description=The key"`
	Namespace string `json:"namespace,omitempty" jsonschema:"maxLength=128,description=Namespace of the key (default: default)"`
}

// MemoryRetrieveOutput is memory_retrieve's result.
type MemoryRetrieveOutput struct {
	Found     bool           `json:"found"`
	Key       string         `json:"key"`
	Namespace string         `json:"namespace"`
	Value     jsontext.Value `json:"value,omitzero"`
	StoredAt  string         `json:"storedAt,omitempty"`
	Message   string         `json:"message,omitempty"`
}

// MemorySearchInput is memory_search's input.
type MemorySearchInput struct {
	Query     string `json:"query" jsonschema:"minLength=1,description=Substring searched (case-sensitive) in keys and in values' JSON"`
	Namespace string `json:"namespace,omitempty" jsonschema:"description=Only this namespace (default: all)"`
	Limit     int    `json:"limit,omitempty" jsonschema:"minimum=1,maximum=100,default=10,description=Maximum number of results (default 10)"`
}

// MemoryEntry is one entry with its value.
type MemoryEntry struct {
	Key       string         `json:"key"`
	Namespace string         `json:"namespace"`
	Value     jsontext.Value `json:"value"`
	StoredAt  string         `json:"storedAt"`
}

// MemorySearchOutput is memory_search's result, most recent first.
type MemorySearchOutput struct {
	Query     string        `json:"query"`
	Namespace string        `json:"namespace"`
	Count     int           `json:"count"`
	Results   []MemoryEntry `json:"results"`
}

// MemoryListInput is memory_list's input.
type MemoryListInput struct {
	Namespace string `json:"namespace,omitempty" jsonschema:"description=Only this namespace (default: all)"`
	Limit     int    `json:"limit,omitempty" jsonschema:"minimum=1,maximum=1000,default=100,description=Maximum number of entries (default 100)"`
	Offset    int    `json:"offset,omitempty" jsonschema:"minimum=0,description=Entries to skip (default 0)"`
}

// MemoryInfo describes one entry without its value.
type MemoryInfo struct {
	Key       string `json:"key"`
	Namespace string `json:"namespace"`
	StoredAt  string `json:"storedAt"`
	Size      int    `json:"size" jsonschema:"description=Value size in bytes"`
}

// MemoryListOutput is memory_list's result, most recent first.
type MemoryListOutput struct {
	Entries []MemoryInfo `json:"entries"`
	Total   int          `json:"total"`
	HasMore bool         `json:"hasMore"`
}

// MemoryDeleteOutput is memory_delete's result.
type MemoryDeleteOutput struct {
	Deleted   bool   `json:"deleted"`
	Key       string `json:"key"`
	Namespace string `json:"namespace"`
	Message   string `json:"message"`
}

func namespaceOr(ns string) string {
	if ns == "" {
		return defaultNamespace
	}
	return ns
}

func registerMemoryTools(reg *registry.Registry, s *store) {
	const module = "memory"
	registry.MustRegister(reg, "memory_store", "Stores a JSON object under a key in a namespace (overwriting it); values are bounded to 100 KB.",
		s.memoryStore, &registry.ToolOptions{Title: "Store memory", Module: module})
	registry.MustRegister(reg, "memory_retrieve", "Returns the value stored under a key.",
		s.memoryRetrieve, &registry.ToolOptions{Title: "Retrieve memory", ReadOnly: true, Module: module})
	registry.MustRegister(reg, "memory_search", "Searches memory for a substring of keys or values, most recent first.",
		s.memorySearch, &registry.ToolOptions{Title: "Search memory", ReadOnly: true, Module: module})
	registry.MustRegister(reg, "memory_list", "Lists memory entries (without values), most recent first, with paging.",
		s.memoryList, &registry.ToolOptions{Title: "List memory", ReadOnly: true, Module: module})
	registry.MustRegister(reg, "memory_delete", "Deletes the entry stored under a key.",
		s.memoryDelete, &registry.ToolOptions{Title: "Delete memory", Destructive: true, Module: module})
}

func (s *store) memoryStore(ctx context.Context, in MemoryStoreInput) (MemoryStoreOutput, error) {
	ns := namespaceOr(in.Namespace)
	v := in.Value.Clone()
	if err := v.Compact(); err != nil {
		return MemoryStoreOutput{}, mcp.NewToolError(mcp.ErrInvalidArgument, "value is not valid JSON: "+err.Error(), nil)
	}
	if len(v) > maxValueBytes {
		return MemoryStoreOutput{}, mcp.NewToolError(mcp.ErrResourceExhausted,
			fmt.Sprintf("value is %d bytes; the limit is %d bytes (100 KB)", len(v), maxValueBytes),
			map[string]any{"reason": "VALUE_TOO_LARGE", "sizeBytes": len(v), "limitBytes": maxValueBytes})
	}
	now := s.now()
	_, err := s.db.ExecContext(ctx, `INSERT INTO agentops_memory (namespace, mkey, mvalue, size, stored_at)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (namespace, mkey) DO UPDATE SET mvalue = excluded.mvalue, size = excluded.size, stored_at = excluded.stored_at`,
		ns, in.Key, string(v), len(v), now)
	if err != nil {
		return MemoryStoreOutput{}, err
	}
	return MemoryStoreOutput{Success: true, Key: in.Key, Namespace: ns, Size: len(v), StoredAt: ts(now),
		Message: fmt.Sprintf("stored %d bytes under %s:%s", len(v), ns, in.Key)}, nil
}

func (s *store) memoryRetrieve(ctx context.Context, in MemoryKeyInput) (MemoryRetrieveOutput, error) {
	out := MemoryRetrieveOutput{Key: in.Key, Namespace: namespaceOr(in.Namespace)}
	var (
		v  string
		at int64
	)
	err := s.db.QueryRowContext(ctx, `SELECT mvalue, stored_at FROM agentops_memory WHERE namespace = $1 AND mkey = $2`,
		out.Namespace, in.Key).Scan(&v, &at)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		out.Message = "no value stored under " + out.Namespace + ":" + in.Key
		return out, nil
	case err != nil:
		return out, err
	}
	out.Found, out.Value, out.StoredAt = true, jsontext.Value(v), ts(at)
	return out, nil
}

func (s *store) memorySearch(ctx context.Context, in MemorySearchInput) (MemorySearchOutput, error) {
	out := MemorySearchOutput{Query: in.Query, Namespace: "all", Results: []MemoryEntry{}}
	var a sqlArgs
	q := a.add(in.Query)
	where := "(" + s.contains("mkey", q) + " OR " + s.contains("mvalue", q) + ")"
	if in.Namespace != "" {
		where += " AND namespace = " + a.add(in.Namespace)
		out.Namespace = in.Namespace
	}
	rows, err := s.db.QueryContext(ctx, `SELECT namespace, mkey, mvalue, stored_at FROM agentops_memory WHERE `+where+
		` ORDER BY stored_at DESC LIMIT `+a.add(clampLimit(in.Limit, 10, 100)), a...)
	if err != nil {
		return out, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			e  MemoryEntry
			v  string
			at int64
		)
		if err := rows.Scan(&e.Namespace, &e.Key, &v, &at); err != nil {
			return out, err
		}
		e.Value, e.StoredAt = jsontext.Value(v), ts(at)
		out.Results = append(out.Results, e)
	}
	out.Count = len(out.Results)
	return out, rows.Err()
}

func (s *store) memoryList(ctx context.Context, in MemoryListInput) (MemoryListOutput, error) {
	out := MemoryListOutput{Entries: []MemoryInfo{}}
	var a sqlArgs
	where := ""
	if in.Namespace != "" {
		where = " WHERE namespace = " + a.add(in.Namespace)
	}
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM agentops_memory`+where, a...).Scan(&out.Total); err != nil {
		return out, err
	}
	limit := clampLimit(in.Limit, 100, 1000)
	rows, err := s.db.QueryContext(ctx, `SELECT namespace, mkey, size, stored_at FROM agentops_memory`+where+
		` ORDER BY stored_at DESC LIMIT `+a.add(limit)+` OFFSET `+a.add(max(in.Offset, 0)), a...)
	if err != nil {
		return out, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			e  MemoryInfo
			at int64
		)
		if err := rows.Scan(&e.Namespace, &e.Key, &e.Size, &at); err != nil {
			return out, err
		}
		e.StoredAt = ts(at)
		out.Entries = append(out.Entries, e)
	}
	out.HasMore = max(in.Offset, 0)+len(out.Entries) < out.Total
	return out, rows.Err()
}

func (s *store) memoryDelete(ctx context.Context, in MemoryKeyInput) (MemoryDeleteOutput, error) {
	out := MemoryDeleteOutput{Key: in.Key, Namespace: namespaceOr(in.Namespace)}
	res, err := s.db.ExecContext(ctx, `DELETE FROM agentops_memory WHERE namespace = $1 AND mkey = $2`, out.Namespace, in.Key)
	if err != nil {
		return out, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return out, err
	}
	out.Deleted = n > 0
	if out.Deleted {
		out.Message = "deleted " + out.Namespace + ":" + in.Key
	} else {
		out.Message = "no value stored under " + out.Namespace + ":" + in.Key
	}
	return out, nil
}
