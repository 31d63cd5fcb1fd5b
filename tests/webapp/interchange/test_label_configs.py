"""Exports carry the tools' label configuration, so Label Studio and brat show the labels
configured: a Label Studio labeling config (XML) beside the JSON, brat's annotation.conf in the
folder; each names every label (and, for brat, every attribute and value) the export uses."""

import json
import re
import zipfile
from io import BytesIO
from xml.etree import ElementTree

from django.urls import reverse

from tests.webapp.interchange.test_export import gold, reviewed  # noqa: F401 (fixtures)
from webapp.interchange.exporting import ExportChoice, export_corpus, peak_source


def test_a_label_studio_export_has_a_labeling_config_naming_every_label(reviewed, gold, tmp_path):  # noqa: F811
    choice = ExportChoice(peaks=peak_source(gold, "tiny-model", profile_name="sharp"), decisions=True)
    export_corpus(gold, "labelstudio", tmp_path / "ward.json", choice)
    config = ElementTree.parse(tmp_path / "ward.labeling-config.xml").getroot()
    assert config.tag == "View"
    text = config.find("Text")
    assert (text.get("name"), text.get("value")) == ("text", "$text")
    labels = config.find("Labels")
    assert (labels.get("name"), labels.get("toName")) == ("label", "text")
    configured = {label.get("value") for label in labels.findall("Label")}
    used = {
        label
        for task in json.loads((tmp_path / "ward.json").read_text())
        for group in task["annotations"] + task["predictions"]
        for result in group["result"]
        for label in result["value"]["labels"]
    }
    assert used == configured == {"fever:present", "heart-rate:tachycardic", "fever"}


def test_a_brat_export_has_an_annotation_conf_naming_every_type_and_attribute(reviewed, gold, tmp_path):  # noqa: F811
    choice = ExportChoice(decisions=True)
    export_corpus(gold, "brat", tmp_path / "brat", choice)
    conf = (tmp_path / "brat" / "annotation.conf").read_text()
    sections = dict(re.findall(r"\[(\w+)\]\n((?:[^\[\n].*\n|\n)*)", conf))
    assert set(sections) == {"entities", "relations", "events", "attributes"}
    entities = set(sections["entities"].split())
    used = set()
    for ann in (tmp_path / "brat").glob("*.ann"):
        used |= set(re.findall(r"^T\d+\t(\S+) ", ann.read_text(), re.M))
    assert used == entities == {"fever:present", "heart-rate:tachycardic", "fever"}
    attributes = dict(re.findall(r"^(\S+)\tArg:<ENTITY>, Value:(\S+)$", sections["attributes"], re.M))
    assert set(attributes["decision"].split("|")) == {"accept", "adjust"}
    assert attributes["adjudicated"] == "true"


def test_the_download_zips_the_labeling_config_beside_the_json(gold, researcher, client_for):  # noqa: F811
    response = client_for(researcher).get(
        reverse("interchange:export", args=[gold.pk]), {"format": "labelstudio", "gold": "on"}
    )
    archive = zipfile.ZipFile(BytesIO(b"".join(response.streaming_content)))
    assert sorted(archive.namelist()) == ["labelstudio.json", "labelstudio.labeling-config.xml"]
    config = ElementTree.fromstring(archive.read("labelstudio.labeling-config.xml"))
    assert {label.get("value") for label in config.iter("Label")} == {"fever:present", "heart-rate:tachycardic"}
