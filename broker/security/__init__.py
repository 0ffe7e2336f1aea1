"""Connection security as a Kafka broker has it: SASL mechanisms (PLAIN, SCRAM), SCRAM
credentials in Kafka's `/config/users` format, the per-listener security configuration, TLS
contexts and the SSL principal mapping (`ssl.principal.mapping.rules`); and the client side a
broker dials its peers' inter-broker listener with (`inter_broker`, `sasl_client`,
`tls.client_context`).

Pure code except `credential_cache` (which reads `/config/users` and follows `/config/changes`)
and `tls` (which loads PEM files into an `ssl.SSLContext`). The per-connection SASL state
machine that drives these is `zkbroker.broker.server.authenticator`.

Deliberately not here: ACLs and the authorizer, quotas, delegation tokens (later steps of
issue 15), GSSAPI and OAUTHBEARER.
"""
