package packetsim

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"time"
)

const msgTokenExpired = "Authentication token has expired"

// expiredTokenMemory is how long an expired access token is still told from
// an unknown one (401 "expired" rather than "invalid"), before it is dropped.
const expiredTokenMemory = 24 * time.Hour

// bearerToken is the token of an "Authorization: Bearer ..." header (the
// scheme in any case), or "".
func bearerToken(r *http.Request) string {
	scheme, token, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// keyDigest names a Metal API key (for rate buckets and the state file)
// without keeping the key.
func keyDigest(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:8])
}

// exchangeAPIKey is the token exchange: a valid Metal API key (checked by
// the front door) buys an access token with the key's project scope.
func (s *Server) exchangeAPIKey(w http.ResponseWriter, r *http.Request) {
	key := bearerToken(r)
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	token := "lbsim-" + base64.RawURLEncoding.EncodeToString(raw)
	ttl := s.opts.LBaaSTokenTTL
	now := s.writeLock()
	for t, old := range s.st.LBaaSTokens {
		if now.Sub(old.ExpiresAt) > expiredTokenMemory {
			delete(s.st.LBaaSTokens, t)
		}
	}
	s.st.LBaaSTokens[token] = &lbaasToken{Key: keyDigest(key), Projects: slices.Clone(s.opts.Tokens[key]), ExpiresAt: now.Add(ttl)}
	s.mu.Unlock()
	s.writeJSON(w, http.StatusOK, map[string]any{"access_token": token, "token_type": "Bearer", "expires_in": int(ttl / time.Second)})
}

// accessToken checks a bearer token of the service: 401 when it is missing
// or unknown (a Metal API key among them), 401 "expired" once it expired.
func (s *Server) accessToken(bearer string, now time.Time) (*lbaasToken, error) {
	if bearer == "" {
		return nil, errorf(http.StatusUnauthorized, msgInvalidToken)
	}
	s.mu.RLock()
	tok := s.st.LBaaSTokens[bearer]
	var out lbaasToken
	if tok != nil {
		out = *tok
	}
	s.mu.RUnlock()
	switch {
	case tok == nil:
		return nil, errorf(http.StatusUnauthorized, msgInvalidToken)
	case !now.Before(out.ExpiresAt):
		return nil, errorf(http.StatusUnauthorized, msgTokenExpired)
	}
	return &out, nil
}
