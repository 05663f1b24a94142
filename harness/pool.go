package harness

import (
	"context"
	"sync"
	"sync/atomic"
)

// forEach is the one worker pool of fiomig (sweep's seeds, reproduce's
// seeds and operators): it calls fn(i) for i = 0..n-1 on at most jobs
// goroutines at once, taking indexes in order. Once ctx is done, or a call
// of fn returned true (stop), no further index is taken; the calls under
// way finish. Which indexes ran is the caller's to record in fn.
func forEach(ctx context.Context, n, jobs int, fn func(i int) (stop bool)) {
	next := make(chan int)
	var stopped atomic.Bool
	var wg sync.WaitGroup
	for range max(1, min(jobs, n)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if stopped.Load() || ctx.Err() != nil {
					continue
				}
				if fn(i) {
					stopped.Store(true)
				}
			}
		}()
	}
feed:
	for i := 0; i < n && ctx.Err() == nil && !stopped.Load(); i++ {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
}
