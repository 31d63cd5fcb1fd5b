from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("review", "0011_report_snapshot"),
    ]

    operations = [
        migrations.AddField(
            model_name="reviewround",
            name="order",
            field=models.CharField(
                choices=[
                    ("drawn", "as drawn (note, task)"),
                    ("disagreement", "disagreement so far first"),
                    ("uncertainty", "the model's uncertainty first (peaks nearest the threshold)"),
                    ("stratified", "random, stratified across tasks"),
                ],
                default="drawn",
                help_text="Which pairs the round's queue serves first (webapp.review.orders)",
                max_length=20,
            ),
        ),
        migrations.AddField(
            model_name="reviewround",
            name="order_seed",
            field=models.PositiveIntegerField(default=0, help_text="The seed of the stratified random order"),
        ),
    ]
