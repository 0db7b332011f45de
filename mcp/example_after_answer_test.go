package mcp_test

import (
	"context"
	"fmt"

	"github.com/keelmcp/keel/mcp"
)

// AfterAnswer runs a function once the request has been answered: here
// a job starts only once the client has been told its id, and never for
// a request that was not answered.
func ExampleRequest_AfterAnswer() {
	started := make(chan string, 1)
	srv := mcp.NewServer(&mcp.ServerOptions{Name: "jobs", Methods: map[string]mcp.MethodHandler{
		"acme/startJob": func(_ context.Context, req *mcp.Request) (any, error) {
			id := "job-1"
			req.AfterAnswer(func() { started <- id })
			return map[string]string{"jobId": id}, nil
		},
	}})
	c, stop := serveExample(srv, &mcp.ClientOptions{})
	defer stop()
	var res struct {
		JobID string `json:"jobId"`
	}
	if err := c.Call(context.Background(), "acme/startJob", nil, &res); err != nil {
		panic(err)
	}
	fmt.Println("answered:", res.JobID)
	fmt.Println("started after the answer:", <-started)
	// Output:
	// answered: job-1
	// started after the answer: job-1
}
