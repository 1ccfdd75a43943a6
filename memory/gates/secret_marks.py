"""Can a logged string hold a secret at all? Answered without loading the credentials gate.

Every search logs its query, hit ids and use token with secret-looking spans masked
(memory/events.py). Compiling the credentials gate's ~40 patterns costs a short CLI search more
than the masking does, and an ordinary query ("billing helios migration"), id or token cannot
match any of them. ``SHAPES`` holds, for each pattern of the gate's screen in its order, the fewest
characters a match has and the literal requirements memory/gates/prefilter.py derives from it
(every clause needs one of its strings in the lower-cased text). They are precomputed here, since
deriving them parses every pattern again, which costs what compiling does;
tests/test_secret_marks.py holds them equal to what the patterns give now. The test is necessary,
never sufficient: a string that passes it goes through the real patterns. The gate's one pattern
outside the screen (labels such as пароль or 密码) matches only text that is not ASCII, which is
always checked.
"""

from __future__ import annotations

# (fewest characters of a match, clauses) per pattern of credentials._SCREEN, in its order
SHAPES: tuple[tuple[int, tuple[tuple[str, ...], ...]], ...] = (
    (67, (('private key',), ('-----begin ',), ('-----',))),
    (20, (('bia', 'cca', 'kia', 'sia'), ('abia', 'acca', 'akia', 'asia'))),
    (40, (('gho_', 'ghp_', 'ghr_', 'ghs_', 'ghu_'),)),
    (41, (('github_pat_',),)),
    (25, (('dt', 'ft', 'pat', 'ptt', 'rt', 'soat'), ('gldt-', 'glft-', 'glpat-', 'glptt-', 'glrt-', 'glsoat-'))),
    (15, (('xoxa-', 'xoxb-', 'xoxo-', 'xoxp-', 'xoxr-', 'xoxs-'),)),
    (52, (
        ('services', 'triggers', 'workflows'),
        ('https://hooks.slack.com/services/t', 'https://hooks.slack.com/triggers/t',
         'https://hooks.slack.com/workflows/t'),
        ('/',),
    )),
    (65, (('https://',), ('discord',), ('.com/api/webhooks/',), ('/',))),
    (24, (('rk', 'sk'), ('live', 'test'), ('rk_live_', 'rk_test_', 'sk_live_', 'sk_test_'))),
    (30, (('whsec_',),)),
    (27, (('sk-ant-',),)),
    (23, (('sk-',),)),
    (39, (('aiza',),)),
    (51, (('accountkey', 'sharedaccesskey'), ('=',))),
    (35, (('&sig=', '?sig='),)),
    (50, (('sg.',), ('.',))),
    (33, (('hf_',),)),
    (40, (('npm_',),)),
    (60, (('pypi-ageichlwas5vcmc',),)),
    (34, (('sk',),)),
    (36, (('key-',),)),
    (36, (('-us',),)),
    (38, (('at', 'ca', 'pa', 'ss'), ('shpat_', 'shpca_', 'shppa_', 'shpss_'))),
    (71, (('doo_v1_', 'dop_v1_', 'dor_v1_'),)),
    (29, (('atp', 'csp'), ('sq0atp-', 'sq0csp-'))),
    (36, (('dapi',),)),
    (106, (('atatt3',),)),
    (44, ((':aa',),)),
    (29, (('dckr_pat_',),)),
    (28, (('hvb.', 'hvs.'),)),
    (46, (
        ('audit', 'ct', 'pt', 'sa', 'scim', 'st'),
        ('dp.audit.', 'dp.ct.', 'dp.pt.', 'dp.sa.', 'dp.scim.', 'dp.st.'),
    )),
    (32, (('nrak-',),)),
    (48, (('lin_api_',),)),
    (83, (('.atlasv1.',),)),
    (22, (('.',),)),
    (8, (('://',), (':',), ('@',))),
    (5, (
        ('access', 'api', 'apikey', 'licence', 'license', 'pass', 'passcode', 'passphrase', 'passwd', 'password',
         'private', 'pwd', 'secret', 'token'),
        (':', ':=', '='),
    )),
    (5, (
        ('api-sleutel', 'chave api', 'chave da api', 'chave de api', 'chiave api', 'clave api', 'clave de api',
         'clef api', 'geheim', 'geheimnis', 'heslo', 'jeton', 'kata sandi', 'kennwort', 'klucz api', 'mdp',
         'mot de passe', 'palavra-passe', "parola d'ordine", 'passwort', 'secreto', 'segredo', 'segreto', 'senha',
         'wachtwoord'),
        (':', '=', '：', '＝'),
    )),
    (23, (('bearer',),)),
    (25, (('activation', 'licence', 'license', 'product', 'registration', 'serial'),)),
    (7, (('key', 'passcode', 'passphrase', 'passwd', 'password', 'pw', 'pwd', 'secret', 'token'),)),
    (13, (('account', 'credentials', 'creds', 'login', 'logins', 'user'), ('/', ':'))),
    (11, (('admin', 'administrator', 'root', 'sa'), ('/',))),
)


def _restricted(alphabet: str) -> tuple[tuple[int, tuple[tuple[str, ...], ...]], ...]:
    """SHAPES for a text made of ``alphabet`` alone: a literal holding any other character cannot be
    in it, so it is dropped, and a pattern one of whose clauses then has none left cannot match;
    ordered by fewest characters, so a scan stops at the first shape longer than the text."""
    allowed = set(alphabet)
    out = []
    for fewest, clauses in SHAPES:
        kept = tuple(tuple(s for s in clause if set(s) <= allowed) for clause in clauses)
        if all(kept):
            out.append((fewest, kept))
    return tuple(sorted(out, key=lambda shape: shape[0]))


_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"
# the shapes a text can match given which characters it holds: letters and digits (an id), plus "_"
# (a use_token), plus " " (most queries), anything else
_BY_ALPHABET = (_restricted(_ALNUM), _restricted(_ALNUM + "_"), _restricted(_ALNUM + "_ "),
                tuple(sorted(SHAPES, key=lambda shape: shape[0])))


def may_hold_secret(text: str) -> bool:
    """False when no credential pattern can match ``text``. Text that is not ASCII is always
    checked: case-insensitive patterns match some non-ASCII letters (the Kelvin sign matches "k")
    that plain lower-casing does not map (the prefilter skips such text too).

    The answer of ``_screen`` over SHAPES; only the shapes the text's characters allow are tried
    (an id, a token or a plain query rules out most patterns by their punctuation alone)."""
    if not text.isascii():
        return True
    low = text.lower()
    if low.isalnum():
        shapes = _BY_ALPHABET[0]
    elif (word := low.replace("_", "a")).isalnum():
        shapes = _BY_ALPHABET[1]
    elif word.replace(" ", "a").isalnum():
        shapes = _BY_ALPHABET[2]
    else:
        shapes = _BY_ALPHABET[3]
    size = len(text)
    for fewest, clauses in shapes:
        if size < fewest:
            return False
        for clause in clauses:
            for literal in clause:
                if literal in low:
                    break
            else:
                break  # a clause none of whose literals is in the text: this pattern cannot match
        else:
            return True
    return False


def _screen(text: str) -> bool:
    """The screen as first written, every shape tried: what ``may_hold_secret`` must answer."""
    if not text.isascii():
        return True
    low = text.lower()
    return any(len(text) >= fewest and all(any(s in low for s in clause) for clause in clauses)
               for fewest, clauses in SHAPES)
