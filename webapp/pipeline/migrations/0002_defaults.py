from django.db import migrations


def create_defaults(apps, schema_editor):
    ModelVersion = apps.get_model("pipeline", "ModelVersion")
    PeakProfile = apps.get_model("pipeline", "PeakProfile")
    # The registry name is resolved under MODEL_DIR when the model is loaded (python -m ml convert).
    ModelVersion.objects.get_or_create(
        name="smollm2-135m-instruct", defaults={"family": "llama", "path": "smollm2-135m-instruct", "is_default": True}
    )
    # The paper's setting: kernel 3, sigma 1.0, lower 0.2, upper 0.4.
    PeakProfile.objects.get_or_create(
        name="paper-default",
        version=1,
        defaults={"kernel_size": 3, "sigma": 1.0, "lower": 0.2, "upper": 0.4, "is_default": True},
    )


class Migration(migrations.Migration):
    dependencies = [("pipeline", "0001_initial")]
    operations = [migrations.RunPython(create_defaults, migrations.RunPython.noop)]
