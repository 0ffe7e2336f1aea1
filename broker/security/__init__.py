"""Connection security as a Kafka broker has it: SASL mechanisms (PLAIN, SCRAM, GSSAPI,
OAUTHBEARER), SCRAM credentials in Kafka's `/config/users` format, the per-listener security
configuration, TLS contexts and the SSL principal mapping (`ssl.principal.mapping.rules`); and
the client side a broker dials its peers' inter-broker listener with (`inter_broker`,
`sasl_client`, `tls.client_context`).

Pure code except `credential_cache` (which reads `/config/users`, then takes the changes the
config watcher re-reads) and `tls` (which loads PEM files into an `ssl.SSLContext`). The
per-connection SASL state machine that drives these is `zkbroker.broker.server.authenticator`.

The ACL authorizer (`authorizer`), client quotas (`quotas`) and delegation tokens
(`delegation_tokens`) are here too; the requests that drive them are the handlers'.
"""
