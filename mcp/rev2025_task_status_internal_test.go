//go:build !keel_omit2025

package mcp

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The statuses waiting for a session: every one while its sender is idle,
// the latest of each task while it is busy, and never more than
// maxPendingStatusBytes (a status that does not fit is dropped, and so is
// the stale one it was to replace).
func TestPendingStatuses(t *testing.T) {
	st := func(id string, status TaskStatus, msg string) *TaskStatusNotificationParams {
		return &TaskStatusNotificationParams{Task: Task{TaskID: id, Status: status, StatusMessage: msg}}
	}
	big := strings.Repeat("x", maxPendingStatusBytes/2)
	type put struct {
		p  *TaskStatusNotificationParams
		ok bool
	}
	tests := []struct {
		name string
		busy bool
		puts []put
		want []TaskStatus // what take returns, in order
	}{
		{"idle: every status, in order", false,
			[]put{{st("a", TaskStatusInputRequired, ""), true}, {st("a", TaskStatusWorking, ""), true}, {st("a", TaskStatusCompleted, ""), true}},
			[]TaskStatus{TaskStatusInputRequired, TaskStatusWorking, TaskStatusCompleted}},
		{"busy: the latest of each task, in its first place", true,
			[]put{{st("a", TaskStatusInputRequired, ""), true}, {st("b", TaskStatusWorking, ""), true},
				{st("a", TaskStatusWorking, ""), true}, {st("a", TaskStatusCompleted, ""), true}},
			[]TaskStatus{TaskStatusCompleted, TaskStatusWorking}},
		{"over the bytes: dropped", false,
			[]put{{st("a", TaskStatusFailed, big), true}, {st("b", TaskStatusFailed, big), false}, {st("c", TaskStatusCompleted, ""), true}},
			[]TaskStatus{TaskStatusFailed, TaskStatusCompleted}},
		{"busy, over the bytes: the stale one goes too", true,
			[]put{{st("a", TaskStatusWorking, big), true}, {st("b", TaskStatusWorking, ""), true}, {st("a", TaskStatusFailed, big+big), false}},
			[]TaskStatus{TaskStatusWorking}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := pendingStatuses{busy: tt.busy}
			for i, p := range tt.puts {
				require.Equal(t, p.ok, q.put(p.p), "put %d", i)
				assert.LessOrEqual(t, q.bytes, maxPendingStatusBytes)
			}
			var got []TaskStatus
			for _, p := range q.take() {
				got = append(got, p.Task.Status)
			}
			assert.Equal(t, tt.want, got)
			assert.True(t, q.busy, "busy while the sender writes what it took")
			assert.Zero(t, q.bytes)
			assert.Empty(t, q.take())
			assert.False(t, q.busy, "idle once a take finds none")
		})
	}
}
