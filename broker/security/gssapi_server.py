"""SASL GSSAPI (Kerberos V5, RFC 4752) on the broker side, through MIT Kerberos and the
`gssapi` package (the `security` extra), as Kafka's broker runs it with the JDK's GSSAPI
SaslServer and its Krb5LoginModule.

The broker's login is the listener's `Krb5LoginModule` JAAS entry (`useKeyTab=true`,
`storeKey=true`, `keyTab`, `principal`, optional `serviceName`), checked at start: the keytab
must hold the principal ("Unable to obtain password from user" otherwise), and a service name
must come from `serviceName` or `sasl.kerberos.service.name` (the same one if both).

`GssapiServer.evaluate` is the server's side of the exchange: GSS tokens until the context is
established (the acceptor bound to the keytab principal, so a ticket for another service is
refused), then the wrapped security-layer offer (no security layer, 65536 bytes, as the JDK
offers), then the client's wrapped choice; the authorization id the client names is ignored,
as Kafka's callback handler authorizes the authenticated principal itself. The user is the
principal's short name (`zkbroker.broker.rules.kerberos_names`). `evaluate` blocks (crypto,
keytab and replay-cache files), so the authenticator runs it in a worker thread (`offload`).

Deliberately not here: the broker's own GSSAPI login towards its peers (inter-broker GSSAPI),
TGT renewal (the acceptor needs no ticket), security layers (Kafka negotiates none).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zkbroker.broker.rules.kerberos_names import (
    BadFormatString,
    KerberosName,
    KerberosShortNamer,
    NoMatchingRule,
    config_rules,
)
from zkbroker.broker.security.jaas import (
    KRB5_LOGIN_MODULE,
    JaasError,
    JaasFile,
    Module,
    module_kerberos_options,
    parse_modules,
)
from zkbroker.broker.security.sasl import SaslClosed, SaslFailed

MECHANISM = "GSSAPI"
# RFC 4752's security layer bits; Kafka's brokers offer only "no security layer".
NO_SECURITY_LAYER = 1
# The JDK's default javax.security.sasl.maxbuffer, sent with the offer.
MAX_BUFFER = 65536
# KerberosError: Kerberos errors Kafka's server takes for transient, closing the connection
# (no SASL answer) so that the client retries: CLIENT_NOT_YET_VALID, TICKET_NOT_YET_VALID,
# REPLAY. MIT reports them as minor codes in its krb5 error table.
_KRB5_ERROR_TABLE_BASE = -1765328384
_RETRIABLE_KRB_ERRORS = {21, 33, 34}

_MISSING_BINDING = (
    "SASL mechanism GSSAPI needs the gssapi package: pip install 'zkbroker[security]' "
    "(it builds against MIT Kerberos: Debian's libkrb5-dev)"
)


def _gssapi() -> Any:
    try:
        import gssapi
    except ImportError:
        raise ValueError(_MISSING_BINDING) from None
    return gssapi


def _true(value: str | None) -> bool:
    # Krb5LoginModule reads its boolean options with equalsIgnoreCase("true").
    return value is not None and value.lower() == "true"


@dataclass(frozen=True)
class KerberosLogin:
    """The broker's login: its keytab principal and the service name clients ask for."""

    principal: str
    keytab: str | None
    store_key: bool
    service_name: str

    @property
    def service(self) -> str:
        return KerberosName.parse(self.principal).service


def kerberos_login(
    options: Mapping[str, str], service_name_config: str | None, where: str
) -> KerberosLogin:
    """The login of a Krb5LoginModule entry's `options` (found in `where`, for messages);
    ValueError when Kafka's broker would not start with it."""
    jaas_service = options.get("serviceName")
    if (
        jaas_service is not None
        and service_name_config is not None
        and jaas_service != service_name_config
    ):
        raise ValueError(
            "Conflicting serviceName values found in JAAS and Kafka configs value in "
            f"JAAS file {jaas_service}, value in Kafka config {service_name_config}"
        )
    service = jaas_service if jaas_service is not None else service_name_config
    if service is None:
        raise ValueError(
            "No serviceName defined in either JAAS or Kafka config (set "
            "sasl.kerberos.service.name, or serviceName in the Krb5LoginModule entry)"
        )
    if not _true(options.get("useKeyTab")):
        # Krb5LoginModule would fall back to prompting, and a broker has nobody to ask.
        raise ValueError(
            f"{where}: Krb5LoginModule needs useKeyTab=true on a broker "
            "(javax.security.auth.login.LoginException: No CallbackHandler available to "
            "garner authentication information from the user)"
        )
    principal = options.get("principal")
    if not principal:
        raise ValueError(
            f"{where}: Krb5LoginModule needs principal=... on a broker "
            "(Unable to obtain Principal Name for authentication)"
        )
    try:
        KerberosName.parse(principal)
    except ValueError:
        raise ValueError(f"Principal has name with unexpected format {principal}") from None
    return KerberosLogin(principal, options.get("keyTab"), _true(options.get("storeKey")), service)


def _name(login: KerberosLogin) -> Any:
    gssapi = _gssapi()
    return gssapi.Name(login.principal, gssapi.NameType.kerberos_principal)


def acceptor_credentials(login: KerberosLogin) -> Any:
    """The acceptor credentials of the login's principal from its keytab (MIT's default
    keytab without `keyTab`); ValueError when the keytab does not hold it."""
    gssapi = _gssapi()
    store = {"keytab": login.keytab} if login.keytab else None
    try:
        return gssapi.Credentials(name=_name(login), usage="accept", store=store)
    except gssapi.exceptions.GSSError as e:
        raise ValueError(
            f"javax.security.auth.login.LoginException: Unable to obtain password from user "
            f"(principal {login.principal} from keytab {login.keytab or 'default'}: "
            f"{_detail(e)})"
        ) from None


def check_login(login: KerberosLogin) -> None:
    """The start-time check of the broker's login: the keytab is readable and holds the
    principal. (The JDK would also get a ticket from the KDC; the acceptor needs none.)"""
    if login.keytab and not Path(login.keytab).is_file():
        raise ValueError(
            "javax.security.auth.login.LoginException: Unable to obtain password from user "
            f"(keytab {login.keytab} does not exist)"
        )
    acceptor_credentials(login)


def default_realm() -> str:
    """The default realm of the Kerberos configuration (`KRB5_CONFIG`, else /etc/krb5.conf),
    as the broker's short-name rules read it; "" when there is none."""
    path = ctypes.util.find_library("krb5") or "libkrb5.so.3"
    try:
        lib = ctypes.CDLL(path)
    except OSError:
        return ""
    context = ctypes.c_void_p()
    if lib.krb5_init_context(ctypes.byref(context)) != 0:
        return ""
    realm = ctypes.c_char_p()
    try:
        if lib.krb5_get_default_realm(context, ctypes.byref(realm)) != 0 or not realm.value:
            return ""
        value = realm.value.decode("utf-8", errors="replace")
        lib.krb5_free_default_realm(context, realm)
        return value
    finally:
        lib.krb5_free_context(context)


def _detail(error: Exception) -> str:
    gen = getattr(error, "gen_message", None)
    return str(gen()) if callable(gen) else str(error)


def _retriable(error: Exception) -> bool:
    minor = getattr(error, "min_code", None)
    if not isinstance(minor, int):
        return False
    signed = minor - (1 << 32) if minor >= 1 << 31 else minor
    return signed - _KRB5_ERROR_TABLE_BASE in _RETRIABLE_KRB_ERRORS


class GssapiServer:
    mechanism = MECHANISM
    # evaluate() blocks: the authenticator runs it in a worker thread.
    offload = True

    def __init__(self, login: KerberosLogin, namer: KerberosShortNamer) -> None:
        self._login = login
        self._namer = namer
        self._context: Any = None
        self._stage = 0
        self.complete = False
        self.authorization_id: str | None = None
        # The client's Kerberos principal once the context is established.
        self.peer: str | None = None
        # Set when the principal has no short name: the exchange completes (as in Kafka,
        # where the principal is built after it) and the connection is closed.
        self.principal_error: str | None = None

    def _accept(self, token: bytes) -> bytes | None:
        gssapi = _gssapi()
        if self._context is None:
            if not self._login.store_key:
                # Without storeKey the JDK login leaves no key for the acceptor: Kafka cannot
                # create the SaslServer and closes the connection.
                raise SaslClosed(
                    "Kafka Server failed to create a SaslServer to interact with a client "
                    "during session authentication (Krb5LoginModule storeKey is not true)"
                )
            try:
                creds = acceptor_credentials(self._login)
            except ValueError as e:
                raise SaslClosed(
                    "Kafka Server failed to create a SaslServer to interact with a client "
                    f"during session authentication ({e})"
                ) from None
            self._context = gssapi.SecurityContext(creds=creds, usage="accept")
        try:
            out: bytes | None = self._context.step(token)
            # A failed accept returns the error token for the peer and raises the error on
            # the context's next use: here, so the failure is the exchange's.
            complete = self._context.complete
        except gssapi.exceptions.GSSError as e:
            if _retriable(e):
                raise SaslClosed(f"GSS initiate failed (retriable): {_detail(e)}") from None
            raise SaslFailed(f"GSS initiate failed: {_detail(e)}") from None
        if not complete:
            return out or b""
        self._stage = 1
        self.peer = str(self._context.initiator_name)
        if out:
            return out
        return self._offer()

    def _offer(self) -> bytes:
        offer = struct.pack(">I", MAX_BUFFER)
        offer = bytes([NO_SECURITY_LAYER]) + offer[1:]
        self._stage = 2
        try:
            return bytes(self._context.wrap(offer, False).message)
        except _gssapi().exceptions.GSSError as e:
            raise SaslFailed(f"Problem wrapping handshake1: {_detail(e)}") from None

    def _choice(self, token: bytes) -> None:
        gssapi = _gssapi()
        try:
            message = bytes(self._context.unwrap(token).message)
        except gssapi.exceptions.GSSError as e:
            raise SaslFailed(f"Final handshake step failed: {_detail(e)}") from None
        if len(message) < 4:
            # The JDK indexes the message unchecked: a runtime error, the connection closed.
            raise SaslClosed(f"security layer reply of {len(message)} bytes")
        if message[0] & NO_SECURITY_LAYER == 0:
            raise SaslFailed(f"Client selected unsupported protection: {message[0]}")
        peer = self.peer or ""
        try:
            self.authorization_id = self._namer.short_name(KerberosName.parse(peer))
        except (NoMatchingRule, BadFormatString, ValueError) as e:
            self.principal_error = (
                f"Failed to set name for '{peer}' based on Kerberos authentication rules: {e}"
            )
            self.authorization_id = peer
        self.complete = True

    def evaluate(self, token: bytes) -> bytes | None:
        """The answer to the client's `token`; None after the last one (no answer, as the
        JDK's server returns none)."""
        if self.complete:
            raise SaslFailed("Unexpected challenge in Sasl server state COMPLETE")
        if self._stage == 0:
            return self._accept(token)
        if self._stage == 1:
            if token:
                raise SaslFailed("Handshake expecting no response data from server")
            return self._offer()
        self._choice(token)
        return None


def listener_kerberos(
    own: Mapping[str, str],
    listener: str,
    release: tuple[int, ...],
    section: tuple[str, tuple[Module, ...]] | None,
    jaas_file: JaasFile | None,
) -> tuple[KerberosLogin, KerberosShortNamer]:
    """A GSSAPI listener's login and short-name rules from its effective configs `own`: the
    Krb5LoginModule of `gssapi.sasl.jaas.config` (from `listener.name.<l>.gssapi.sasl.jaas.config`,
    1.1+), else of the JAAS file's section; `sasl.kerberos.service.name`;
    `sasl.kerberos.principal.to.local.rules` with the configured default realm. ValueError when
    Kafka's broker (or zkbroker) would not start with them; the keytab is checked here."""
    text = own.get("gssapi.sasl.jaas.config") if release >= (1, 1) else None
    if text is not None:
        try:
            modules: tuple[Module, ...] = tuple(parse_modules(text))
        except JaasError as e:
            raise ValueError(f"sasl.jaas.config: {e}") from None
        where = f"listener.name.{listener.lower()}.gssapi.sasl.jaas.config"
    elif section is not None:
        modules, where = section[1], f"JAAS file section {section[0]}"
    elif jaas_file is not None:
        raise ValueError(jaas_file.missing_section_message(listener, release))
    else:
        raise ValueError(
            f"Could not find a 'KafkaServer' or '{listener.lower()}.KafkaServer' entry in the "
            f"JAAS configuration: set listener.name.{listener.lower()}.gssapi.sasl.jaas.config "
            "(a com.sun.security.auth.module.Krb5LoginModule entry) for GSSAPI"
        )
    options = module_kerberos_options(modules)
    if options is None:
        raise ValueError(
            f"{where}: GSSAPI needs a {KRB5_LOGIN_MODULE} entry (keyTab, principal, "
            "useKeyTab=true, storeKey=true)"
        )
    service = own.get("sasl.kerberos.service.name")
    login = kerberos_login(options, service.strip() if service else None, where)
    rules_text = own.get("sasl.kerberos.principal.to.local.rules")
    rules = None if rules_text is None else config_rules(rules_text)
    try:
        namer = KerberosShortNamer.parse(default_realm(), rules, release)
    except ValueError as e:
        raise ValueError(f"sasl.kerberos.principal.to.local.rules: {e}") from None
    check_login(login)
    return login, namer
