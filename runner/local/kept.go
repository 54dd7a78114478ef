package local

import (
	"slices"
	"sync"
)

// kept are things ended jobs had, kept for later jobs: at most max of them
// (0: any number). Safe for concurrent use.
type kept[T any] struct {
	max   int
	mu    sync.Mutex
	items []T
}

// take removes and returns the last kept item that fits (nil: any).
func (k *kept[T]) take(fits func(T) bool) (item T, ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for i := len(k.items) - 1; i >= 0; i-- {
		if fits == nil || fits(k.items[i]) {
			item = k.items[i]
			k.items = slices.Delete(k.items, i, i+1)
			return item, true
		}
	}
	return item, false
}

// full reports whether put would refuse an item now.
func (k *kept[T]) full() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.max > 0 && len(k.items) >= k.max
}

// put keeps item unless max are kept, and reports whether it did.
func (k *kept[T]) put(item T) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.max > 0 && len(k.items) >= k.max {
		return false
	}
	k.items = append(k.items, item)
	return true
}

// takeAll removes and returns every kept item.
func (k *kept[T]) takeAll() []T {
	k.mu.Lock()
	defer k.mu.Unlock()
	items := k.items
	k.items = nil
	return items
}
