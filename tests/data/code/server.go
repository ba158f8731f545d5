package main

import (
	"encoding/json"
	"log"
	"net/http"
	"sync"
	"time"
)

// Session is one signed-in user; sessions expire after SessionTTL of inactivity.
type Session struct {
	UserID   string
	LastSeen time.Time
}

const SessionTTL = 30 * time.Minute

// Store keeps the sessions in memory, guarded by a mutex.
type Store struct {
	mu       sync.Mutex
	sessions map[string]*Session
}

func NewStore() *Store {
	return &Store{sessions: make(map[string]*Session)}
}

// Touch marks a session as active and reports whether it was still valid.
func (s *Store) Touch(token string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	session, ok := s.sessions[token]
	if !ok || now.Sub(session.LastSeen) > SessionTTL {
		delete(s.sessions, token)
		return false
	}
	session.LastSeen = now
	return true
}

func healthHandler(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]string{"status": "ok"})
}

func main() {
	http.HandleFunc("/healthz", healthHandler)
	log.Println("listening on :8080")
	log.Fatal(http.ListenAndServe(":8080", nil))
}
