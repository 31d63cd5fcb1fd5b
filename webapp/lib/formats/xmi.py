"""UIMA CAS XMI (INCEpTION, WebAnno, DKPro): a folder of X.xmi (or .xml) files, read and written
with dkpro-cassis.

Offsets in XMI count UTF-16 code units (UIMA is Java); cassis converts them to code points when
it loads a file and back when it writes one.

Reading. The type system is the folder's TypeSystem.xml (typesystem.xml) when there is one;
otherwise it is inferred from the file itself (E3C's files, as published, come without one): each
element names its type by its namespace and tag (`http:///webanno/custom.ecore` + `EVENT` ->
`webanno.custom.EVENT`), an element with begin and end is an annotation, and its other attributes
are string features. `ReadOptions.layer` chooses the annotation type to read (its full name or its
last part, `CLINENTITY`); empty: every `webanno.custom.*` annotation layer (E3C's CLINENTITY,
EVENT, BODYPART, ACTOR, TIMEX3, RML). `ReadOptions.feature` chooses the feature whose value is
the label; empty: the layer's short name. The other string features become attributes. An
annotation without a value for that feature (or a file whose layer has no such feature at all:
an inferred type system knows only the features its file uses) stops the reading of its file,
unless `ReadOptions.missing_feature` says to skip it or to label it `feature_default`; the
document counts those spans in `metadata["spans_without_feature"]`.
Zero-length annotations (E3C's METADATA) are not spans and are skipped. The document's id is the
file's name without its suffix. A file (or type system) over `ReadOptions.file_bytes`
divided by PARSED_SIZE (IMPORT_MAX_FILE_BYTES / 24: 21 MiB by default; E3C's largest file is
108 KB) is refused before it is parsed: cassis holds a whole document, at about 23 times its
size, and a parse cannot be stopped halfway, only between files.

Writing. Our spans go to layers of their own, `webanno.custom.DsmGold`, `DsmPeak` (predictions)
and `DsmDecision`, each with the features `label`, `reviewer`, `attributes` (JSON) and `group`
(the id shared by the fragments of a discontinuous span: UIMA annotations are contiguous); a
TypeSystem.xml is written beside the files, so INCEpTION can import them with those layers.
No Django here."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from cassis import Cas, TypeSystem, load_cas_from_xmi, load_typesystem
from lxml import etree

from webapp.lib.formats._files import check_size, checked, file_limit, id_of_name, reported, safe_name
from webapp.lib.formats.document import WITHOUT_FEATURE, Document, FormatError, Span
from webapp.lib.messages import Message, gettext_noop, message

CARRIES = ("discontinuous", "attributes", "source", "reviewer")
MEMBERS = (".xmi", ".xml")  # a folder's files; TypeSystem.xml among them
CUSTOM = "webanno.custom."
LAYERS = {
    "gold": "webanno.custom.DsmGold",
    "prediction": "webanno.custom.DsmPeak",
    "decision": "webanno.custom.DsmDecision",
}
OUR_FEATURES = ("label", "reviewer", "attributes", "group")
ANNOTATION = "uima.tcas.Annotation"
XMI_NS = "http://www.omg.org/XMI"
SKIPPED_NS = (XMI_NS, "http:///uima/cas.ecore")
TYPESYSTEM_NAMES = ("typesystem.xml",)
NOT_FEATURES = {"begin", "end", "sofa", f"{{{XMI_NS}}}id"}
_NONE = gettext_noop("none")
_SKIP_OR_DEFAULT = gettext_noop(
    "skip such spans or give them a default label (--missing-feature skip, or default with --feature-default; "
    "the Import page's 'Spans without the feature')"
)
PARSED_SIZE = 24  # cassis holds a document at ~23 times its bytes (8.4 MiB -> +192 MiB, measured)


def read(path: Path, options, problems) -> Iterator[Document]:
    return reported(_documents(path, options), problems, options)


def _documents(path: Path, options) -> Iterator[Document | FormatError]:
    layer, feature = options.layer, options.feature
    limit = file_limit(options, PARSED_SIZE, "an XMI file")
    files = _xmi_files(path)
    if not files:
        yield FormatError(path.name, None, message(gettext_noop("holds no .xmi or .xml files")))
        return
    shared = None
    folder = path if path.is_dir() else path.parent
    declared = (
        next((p for p in folder.iterdir() if p.name.lower() in TYPESYSTEM_NAMES), None) if path.is_dir() else None
    )
    if declared is not None:
        try:
            check_size(declared, limit)
            with declared.open("rb") as f:
                shared = load_typesystem(f)
        except FormatError as exc:
            yield exc
            return
        except Exception as exc:  # cassis raises plain exceptions for a bad type system
            yield FormatError(
                declared.name,
                None,
                message(gettext_noop("not a UIMA type system (%(type)s)"), type=type(exc).__name__),
            )
            return
    for file in files:
        try:
            check_size(file, limit)  # parsed whole, a document takes several times its size
            typesystem = shared or _inferred_typesystem(file)
            with file.open("rb") as f:
                cas = load_cas_from_xmi(f, typesystem=typesystem, lenient=True)
            doc = _document(cas, typesystem, file, layer, feature, options)
        except FormatError as exc:
            yield exc
            continue
        except etree.XMLSyntaxError as exc:
            yield FormatError(
                file.name,
                f"line {exc.lineno}",
                message(gettext_noop("not well-formed XML (%(reason)s)"), reason=exc.msg),
            )
            continue
        except Exception as exc:  # cassis: a file that does not match its type system
            yield FormatError(
                file.name,
                None,
                message(
                    gettext_noop("not a UIMA CAS XMI file cassis can read (%(type)s: %(reason)s)"),
                    type=type(exc).__name__,
                    reason=str(exc)[:120],
                ),
            )
            continue
        yield checked(doc, file.name, "")


def _xmi_files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(
            p
            for p in path.iterdir()
            if p.is_file() and p.suffix.lower() in (".xmi", ".xml") and p.name.lower() not in TYPESYSTEM_NAMES
        )
    return [path] if path.is_file() else []


def _inferred_typesystem(file: Path) -> TypeSystem:
    """Types and string features as the file's elements name them (module docstring)."""
    found: dict[str, tuple[bool, set[str]]] = {}
    for _, elem in etree.iterparse(str(file), events=("end",), resolve_entities=False, no_network=True):
        tag = elem.tag
        if (
            isinstance(tag, str)
            and tag.startswith("{")
            and elem.getparent() is not None
            and elem.getparent().getparent() is None
        ):
            uri, local = tag[1:].split("}", 1)
            if uri not in SKIPPED_NS:
                name = _package(uri) + local
                is_annotation, features = found.setdefault(
                    name, ("begin" in elem.attrib and "end" in elem.attrib, set())
                )
                features.update(a for a in elem.attrib if a not in NOT_FEATURES and not a.startswith("{"))
            elem.clear()
    ts = TypeSystem()
    for name, (is_annotation, features) in sorted(found.items()):
        if ts.contains_type(name):
            continue
        t = ts.create_type(name, supertypeName=ANNOTATION if is_annotation else "uima.cas.TOP")
        for feature in sorted(features):
            ts.create_feature(t, feature, "uima.cas.String")
    return ts


def _package(uri: str) -> str:
    """'http:///webanno/custom.ecore' -> 'webanno.custom.'"""
    body = uri.removeprefix("http://").strip("/").removesuffix(".ecore")
    return body.replace("/", ".") + "."


def _document(cas: Cas, typesystem: TypeSystem, file: Path, layer: str, feature: str, options=None) -> Document:
    text = cas.sofa_string or ""
    layers = _layers(typesystem, layer, file)
    doc = Document(id_of_name(file.stem), text, where=file.name)
    missing = getattr(options, "missing_feature", "refuse")
    without_feature = 0
    groups: dict[tuple[str, str], dict] = {}
    for type_name in layers:
        ours = type_name in LAYERS.values()
        source = next((s for s, t in LAYERS.items() if t == type_name), "gold")
        short = type_name.rsplit(".", 1)[-1]
        t = typesystem.get_type(type_name)
        names = [
            f.name
            for f in t.all_features
            if f.name not in ("begin", "end", "sofa") and typesystem.is_primitive(f.rangeType)
        ]
        if feature and not ours and feature not in names and missing == "refuse":
            raise FormatError(
                file.name,
                None,
                message(
                    gettext_noop("layer %(layer)s has no feature %(feature)s (it has: %(names)s); %(what_to_do)s"),
                    layer=type_name,
                    feature=repr(feature),
                    names=", ".join(names) or Message(_NONE),
                    what_to_do=Message(_SKIP_OR_DEFAULT),
                ),
            )
        for ann in cas.select(type_name):
            if ann.begin is None or ann.end is None or ann.begin >= ann.end:
                continue
            where = message(gettext_noop("annotation xmi:id %(id)s"), id=ann.xmiID)
            if ours:
                label, reviewer = ann.get("label") or "", ann.get("reviewer") or ""
                try:
                    attributes = json.loads(ann.get("attributes") or "{}")
                except json.JSONDecodeError:
                    raise FormatError(
                        file.name, where, message(gettext_noop("feature 'attributes' is not JSON"))
                    ) from None
                key = (type_name, ann.get("group") or str(ann.xmiID))
            else:
                label = short if not feature else (ann.get(feature) if feature in names else None)
                if not label:
                    if missing == "refuse":
                        raise FormatError(
                            file.name,
                            where,
                            message(
                                gettext_noop("%(layer)s has no value for feature %(feature)s; %(what_to_do)s"),
                                layer=short,
                                feature=repr(feature),
                                what_to_do=Message(_SKIP_OR_DEFAULT),
                            ),
                        )
                    without_feature += 1
                    if missing == "skip":
                        continue
                    label = options.feature_default
                reviewer = ""
                attributes = {n: ann.get(n) for n in names if n != feature and ann.get(n) not in (None, "")}
                key = (type_name, str(ann.xmiID))
            entry = groups.setdefault(
                key,
                {"ranges": [], "label": str(label), "attributes": attributes, "source": source, "reviewer": reviewer},
            )
            entry["ranges"].append((ann.begin, ann.end))
    for (_, gid), e in groups.items():
        doc.spans.append(
            Span.of(
                sorted(e["ranges"]), e["label"], e["attributes"], source=e["source"], reviewer=e["reviewer"], id=gid
            )
        )
    doc.spans.sort(key=lambda s: (s.start, s.end, s.label))
    if without_feature:
        doc.metadata[WITHOUT_FEATURE] = without_feature
    return doc


def _layers(typesystem: TypeSystem, layer: str, file: Path) -> list[str]:
    annotations = sorted(
        t.name for t in typesystem.get_types() if typesystem.subsumes(ANNOTATION, t.name) and t.name != ANNOTATION
    )
    if not layer:
        return [n for n in annotations if n.startswith(CUSTOM)]
    chosen = [n for n in annotations if n == layer or n.rsplit(".", 1)[-1] == layer]
    if not chosen:
        custom = [n.rsplit(".", 1)[-1] for n in annotations if n.startswith(CUSTOM)]
        raise FormatError(
            file.name,
            None,
            message(
                gettext_noop("no annotation layer %(layer)s (its custom layers: %(names)s)"),
                layer=repr(layer),
                names=", ".join(custom) or Message(_NONE),
            ),
        )
    return chosen


def our_typesystem() -> TypeSystem:
    ts = TypeSystem()
    for name in LAYERS.values():
        t = ts.create_type(name, supertypeName=ANNOTATION)
        for feature in OUR_FEATURES:
            ts.create_feature(t, feature, "uima.cas.String")
    return ts


def write(documents: Iterable[Document], path: Path) -> None:
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    ts = our_typesystem()
    (folder / "TypeSystem.xml").write_text(ts.to_xml(), encoding="utf-8")
    for doc in documents:
        cas = Cas(typesystem=ts)
        cas.sofa_string = doc.text
        cas.sofa_mime = "text/plain"
        for n, span in enumerate(doc.spans, 1):
            T = ts.get_type(LAYERS[span.source])
            group = span.id or f"s{n}"
            for s, e in span.ranges:
                cas.add(
                    T(
                        begin=s,
                        end=e,
                        label=span.label,
                        reviewer=span.reviewer,
                        attributes=json.dumps(span.attrs, ensure_ascii=False),
                        group=group,
                    )
                )
        cas.to_xmi(str(folder / f"{safe_name(doc.id)}.xmi"))
